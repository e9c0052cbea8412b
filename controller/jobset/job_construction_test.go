package jobset

import (
	"crypto/sha1"
	"encoding/hex"
	"maps"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestConstructJobLabelsAndAnnotations(t *testing.T) {
	js := makeJobSet("js").rjob("leader", 1, 2).rjob("workers", 3, 2).restarts(2).obj()
	js.Spec.Coordinator = &jobsetapi.Coordinator{ReplicatedJob: "leader"}
	job := childJob(js, "workers", 1)
	sum := sha1.Sum([]byte("default/js-workers-1"))
	want := map[string]string{
		"jobset.sigs.k8s.io/jobset-name":            "js",
		"jobset.sigs.k8s.io/jobset-uid":             "js-uid",
		"jobset.sigs.k8s.io/replicatedjob-name":     "workers",
		"jobset.sigs.k8s.io/replicatedjob-replicas": "3",
		"jobset.sigs.k8s.io/global-replicas":        "4",
		"jobset.sigs.k8s.io/job-index":              "1",
		"jobset.sigs.k8s.io/job-global-index":       "2",
		"jobset.sigs.k8s.io/job-key":                hex.EncodeToString(sum[:]),
		"jobset.sigs.k8s.io/restart-attempt":        "2",
		"jobset.sigs.k8s.io/job-restart-attempt":    "0",
		"jobset.sigs.k8s.io/group-name":             "default",
		"jobset.sigs.k8s.io/group-replicas":         "4",
		"jobset.sigs.k8s.io/job-group-index":        "2",
		"jobset.sigs.k8s.io/coordinator":            "js-leader-0-0.js",
	}
	if job.Name != "js-workers-1" || job.Namespace != "default" {
		t.Errorf("job name = %s/%s, want default/js-workers-1", job.Namespace, job.Name)
	}
	for _, m := range []map[string]string{job.Labels, job.Annotations, job.Spec.Template.Annotations} {
		if !maps.Equal(m, want) {
			t.Errorf("keys = %v, want %v", m, want)
		}
	}
	podLabels := maps.Clone(want)
	podLabels["jobset.sigs.k8s.io/priority"] = "0"
	if !maps.Equal(job.Spec.Template.Labels, podLabels) {
		t.Errorf("pod template labels = %v, want %v", job.Spec.Template.Labels, podLabels)
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.Kind != "JobSet" || ref.Name != "js" || ref.UID != "js-uid" || ref.APIVersion != "jobset.x-k8s.io/v1alpha2" {
		t.Errorf("controller ref = %+v", ref)
	}
	if job.Spec.Template.Spec.Subdomain != "js" {
		t.Errorf("subdomain = %q, want js", job.Spec.Template.Spec.Subdomain)
	}
	if job.Spec.Suspend == nil || *job.Spec.Suspend {
		t.Errorf("suspend = %v, want false", job.Spec.Suspend)
	}
}

func TestConstructJobOptions(t *testing.T) {
	cases := map[string]struct {
		mutate func(js *jobsetapi.JobSet)
		check  func(t *testing.T, job *batchv1.Job)
	}{
		"custom subdomain": {
			mutate: func(js *jobsetapi.JobSet) { js.Spec.Network.Subdomain = "net" },
			check: func(t *testing.T, job *batchv1.Job) {
				if job.Spec.Template.Spec.Subdomain != "net" {
					t.Errorf("subdomain = %q, want net", job.Spec.Template.Spec.Subdomain)
				}
			}},
		"dns hostnames disabled": {
			mutate: func(js *jobsetapi.JobSet) { js.Spec.Network.EnableDNSHostnames = ptr.To(false) },
			check: func(t *testing.T, job *batchv1.Job) {
				if job.Spec.Template.Spec.Subdomain != "" {
					t.Errorf("subdomain = %q, want empty", job.Spec.Template.Spec.Subdomain)
				}
			}},
		"suspended jobset creates suspended jobs": {
			mutate: func(js *jobsetapi.JobSet) { js.Spec.Suspend = ptr.To(true) },
			check: func(t *testing.T, job *batchv1.Job) {
				if !ptr.Deref(job.Spec.Suspend, false) {
					t.Errorf("job not suspended")
				}
			}},
		"template labels are kept": {
			mutate: func(js *jobsetapi.JobSet) { js.Spec.ReplicatedJobs[0].Template.Labels = map[string]string{"team": "a"} },
			check: func(t *testing.T, job *batchv1.Job) {
				if job.Labels["team"] != "a" {
					t.Errorf("labels = %v, want team=a", job.Labels)
				}
			}},
		"per-job restart attempt from status": {
			mutate: func(js *jobsetapi.JobSet) {
				js.Status.ReplicatedJobsStatus = []jobsetapi.ReplicatedJobStatus{{Name: "leader", JobRestarts: []int32{4}}}
			},
			check: func(t *testing.T, job *batchv1.Job) {
				if job.Labels[jobRestartAttemptKey] != "4" {
					t.Errorf("job-restart-attempt = %q, want 4", job.Labels[jobRestartAttemptKey])
				}
			}},
		"exclusive placement with node selector strategy": {
			mutate: func(js *jobsetapi.JobSet) {
				js.Annotations = map[string]string{jobsetapi.ExclusiveKey: "rack", jobsetapi.NodeSelectorStrategyKey: "true"}
			},
			check: func(t *testing.T, job *batchv1.Job) {
				if job.Annotations[jobsetapi.ExclusiveKey] != "rack" || job.Spec.Template.Spec.NodeSelector[jobsetapi.NamespacedJobKey] != "default_js-leader-0" {
					t.Errorf("annotations %v nodeSelector %v", job.Annotations, job.Spec.Template.Spec.NodeSelector)
				}
				if len(job.Spec.Template.Spec.Tolerations) != 1 || job.Spec.Template.Spec.Tolerations[0].Key != jobsetapi.NoScheduleTaintKey {
					t.Errorf("tolerations = %v", job.Spec.Template.Spec.Tolerations)
				}
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := makeJobSet("js").rjob("leader", 1, 1).obj()
			tc.mutate(js)
			tc.check(t, childJob(js, "leader", 0))
		})
	}
}

func TestJobsToCreate(t *testing.T) {
	js := makeJobSet("js").rjob("workers", 3, 1).obj()
	old := childJob(js, "workers", 1)
	blocking := makeJobSet("js").rjob("workers", 3, 1).obj()
	blocking.Spec.FailurePolicy = &jobsetapi.FailurePolicy{RestartStrategy: jobsetapi.BlockingRecreate}
	cases := map[string]struct {
		js   *jobsetapi.JobSet
		jobs childJobs
		want []string
	}{
		"all jobs created":                    {js: js, want: []string{"js-workers-0", "js-workers-1", "js-workers-2"}},
		"one already active":                  {js: js, jobs: childJobs{active: []*batchv1.Job{old}}, want: []string{"js-workers-0", "js-workers-2"}},
		"one already succeeded":               {js: js, jobs: childJobs{successful: []*batchv1.Job{old}}, want: []string{"js-workers-0", "js-workers-2"}},
		"one already failed":                  {js: js, jobs: childJobs{failed: []*batchv1.Job{old}}, want: []string{"js-workers-0", "js-workers-2"}},
		"Recreate waits per name":             {js: js, jobs: childJobs{previous: []*batchv1.Job{old}}, want: []string{"js-workers-0", "js-workers-2"}},
		"BlockingRecreate waits for all gone": {js: blocking, jobs: childJobs{previous: []*batchv1.Job{old}}, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := jobNames(jobsToCreate(tc.js, &tc.js.Spec.ReplicatedJobs[0], &tc.jobs))
			if !slices.Equal(got, tc.want) {
				t.Errorf("created %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGroupAndGlobalIndexes(t *testing.T) {
	js := makeJobSet("js").rjob("a", 2, 1).rjob("b", 3, 1).rjob("c", 1, 1).obj()
	js.Spec.ReplicatedJobs[1].GroupName = "g"
	if got := globalJobIndex(js, "c", 0); got != "5" {
		t.Errorf("global index of c-0 = %s, want 5", got)
	}
	if got := globalJobIndex(js, "missing", 0); got != "" {
		t.Errorf("global index of unknown rjob = %q, want empty", got)
	}
	if got := groupJobIndex(js, "default", "c", 0); got != "2" {
		t.Errorf("group index of c-0 = %s, want 2", got)
	}
	if got := groupReplicas(js, "g"); got != 3 {
		t.Errorf("group replicas of g = %d, want 3", got)
	}
}
