package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/batchlet/batchlet/indexset"
)

// Labels and annotations linking a re-run Job to its original.
const (
	// RerunOfLabel names the original Job (a label, so `kubectl get jobs
	// -l batchlet.dev/rerun-of=NAME` lists its re-runs).
	RerunOfLabel = "batchlet.dev/rerun-of"
	// RerunOfUIDAnnotation is the original Job's UID.
	RerunOfUIDAnnotation = "batchlet.dev/rerun-of-uid"
	// RerunIndexesAnnotation lists the indexes the re-run runs.
	RerunIndexesAnnotation = "batchlet.dev/rerun-indexes"
	// maxReruns bounds the JOB-rerun-N names tried.
	maxReruns = 1000
)

// The unprefixed labels the API server still adds beside the
// batch.kubernetes.io/ ones.
const (
	legacyControllerUIDLabel = "controller-uid"
	legacyJobNameLabel       = "job-name"
)

// Labels the Job controller and the API server put on a Job and its pod
// template; a copy must not carry them, or it would select the original's
// pods.
var jobOwnLabels = []string{
	batchv1.ControllerUidLabel, batchv1.JobNameLabel, legacyControllerUIDLabel, legacyJobNameLabel,
}

type rerunFlags struct {
	waitFlags
	failed bool
}

func newRerunCommand() *cobra.Command {
	var f rerunFlags
	cmd := &cobra.Command{
		Use:   "rerun JOB --failed",
		Short: "Run the failed indexes of a finished Indexed Job again, as a new Job",
		Long: `Rerun creates a new Job, JOB-rerun-N, that runs only the indexes of a
finished Indexed Job that did not succeed (those in status.failedIndexes
and those never completed), with their own index numbers: the same spec
(completions included), with the original's completedIndexes carried over.

It creates the new Job suspended, writes the succeeded indexes into its
status (completedIndexes, succeeded), then resumes it: the Job controller
creates pods only for indexes not yet completed. Every field is upstream's,
so this works on a real cluster too. The new Job is labelled
batchlet.dev/rerun-of=JOB and annotated with the original's UID
(batchlet.dev/rerun-of-uid) and the indexes it runs
(batchlet.dev/rerun-indexes).

The server is found as for batchlet wait.

  batchlet rerun train --failed
  kubectl wait --for=condition=complete job/train-rerun-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !f.failed {
				return errors.New("batchlet rerun needs --failed (the only mode: re-run the indexes that did not succeed)")
			}
			cfg, err := clientConfig(f.kubeconfig, f.server, f.dataDir)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("client for %s: %w", cfg.Host, err)
			}
			return rerunFailed(cmd.Context(), client, f.namespace, args[0], cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the server (default: KUBECONFIG, then the data dir's)")
	fl.StringVar(&f.server, "server", "", "URL of the server (overrides the kubeconfig's)")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of a batchlet server whose kubeconfig to use (default ~/.batchlet)")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the Job")
	fl.BoolVar(&f.failed, "failed", false, "re-run the indexes that did not succeed")
	return cmd
}

// rerunFailed creates, fills and resumes the re-run of the Job ns/name.
func rerunFailed(ctx context.Context, client kubernetes.Interface, ns, name string, out io.Writer) error {
	jobs := client.BatchV1().Jobs(ns)
	orig, err := jobs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get job %s/%s: %w", ns, name, err)
	}
	plan, err := planRerun(orig)
	if err != nil {
		return err
	}
	created, err := createRerun(ctx, client, plan.job)
	if err != nil {
		return err
	}
	if err := carryCompleted(ctx, client, created, plan); err != nil {
		return fmt.Errorf("job %s created suspended, but carrying the completed indexes over failed (delete it and retry): %w", created.Name, err)
	}
	resume := []byte(`{"spec":{"suspend":false}}`)
	if _, err := jobs.Patch(ctx, created.Name, types.MergePatchType, resume, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("resume job %s: %w", created.Name, err)
	}
	fmt.Fprintf(out, "job.batch/%s created: runs indexes %s of job %s (completedIndexes %s carried over)\n",
		created.Name, plan.rerun, name, orig.Status.CompletedIndexes)
	return nil
}

// rerunPlan is the new Job (without its name) and what its status starts
// from.
type rerunPlan struct {
	job       *batchv1.Job
	completed string // the original's completedIndexes
	succeeded int32  // how many indexes that is
	rerun     string // the indexes to run, as completedIndexes spells them
}

// planRerun checks that orig is a finished Indexed Job with indexes that
// did not succeed and builds its re-run.
func planRerun(orig *batchv1.Job) (rerunPlan, error) {
	if orig.Spec.CompletionMode == nil || *orig.Spec.CompletionMode != batchv1.IndexedCompletion || orig.Spec.Completions == nil {
		return rerunPlan{}, fmt.Errorf("job %s is not Indexed: rerun --failed needs completionMode Indexed, whose index numbers it keeps", orig.Name)
	}
	if !jobFinished(orig) {
		return rerunPlan{}, fmt.Errorf("job %s has not finished (no Complete or Failed condition): wait for it first", orig.Name)
	}
	completions := int(*orig.Spec.Completions)
	done, err := indexset.Parse(orig.Status.CompletedIndexes, completions)
	if err != nil {
		return rerunPlan{}, fmt.Errorf("job %s: status.completedIndexes %q: %w", orig.Name, orig.Status.CompletedIndexes, err)
	}
	rerun := make([]bool, completions)
	failed := 0
	for i := range completions {
		if !done[i] {
			rerun[i] = true
			failed++
		}
	}
	if failed == 0 {
		return rerunPlan{}, fmt.Errorf("job %s has no failed indexes: all %d completed", orig.Name, completions)
	}
	p := rerunPlan{completed: orig.Status.CompletedIndexes, succeeded: int32(completions - failed), rerun: indexset.Format(rerun)}
	p.job = rerunJob(orig, p.rerun)
	return p, nil
}

// rerunJob copies orig's spec and labels into a suspended Job with no
// selector of its own (the API server generates one, as for a new Job).
func rerunJob(orig *batchv1.Job, indexes string) *batchv1.Job {
	spec := orig.Spec.DeepCopy()
	spec.Selector, spec.ManualSelector = nil, nil
	spec.Suspend = new(true)
	spec.Template.Labels = withoutJobLabels(spec.Template.Labels)
	labels := withoutJobLabels(orig.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RerunOfLabel] = orig.Name
	annotations := map[string]string{RerunOfUIDAnnotation: string(orig.UID), RerunIndexesAnnotation: indexes}
	for k, v := range orig.Annotations {
		if k != corev1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: orig.Namespace, Labels: labels, Annotations: annotations},
		Spec:       *spec,
	}
}

func withoutJobLabels(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	for _, k := range jobOwnLabels {
		delete(out, k)
	}
	return out
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// createRerun creates job as ORIGINAL-rerun-N with the first free N.
func createRerun(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) (*batchv1.Job, error) {
	base := job.Labels[RerunOfLabel]
	for n := 1; n <= maxReruns; n++ {
		job.Name = fmt.Sprintf("%s-rerun-%d", base, n)
		created, err := client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create job %s: %w", job.Name, err)
		}
		return created, nil
	}
	return nil, fmt.Errorf("%s-rerun-1 … %s-rerun-%d all exist", base, base, maxReruns)
}

// carryCompleted writes the original's succeeded indexes into the new
// Job's status, retrying when the Job controller's own status write (its
// Suspended condition) comes first.
func carryCompleted(ctx context.Context, client kubernetes.Interface, job *batchv1.Job, p rerunPlan) error {
	jobs := client.BatchV1().Jobs(job.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.CompletedIndexes = p.completed
		cur.Status.Succeeded = p.succeeded
		_, err = jobs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}
