package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPeerBinDir(t *testing.T) {
	cases := []struct {
		name string
		flag string
		env  map[string]string
		want string
	}{
		{"flag wins", "/opt/k8s", map[string]string{"BATCHLET_REALCLUSTER_BIN": "/x"}, "/opt/k8s"},
		{"bin env", "", map[string]string{"BATCHLET_REALCLUSTER_BIN": "/x", "BATCHLET_REALCLUSTER_CACHE": "/c"}, "/x"},
		{"cache env", "", map[string]string{"BATCHLET_REALCLUSTER_CACHE": "/c"}, "/c/bin"},
		{"xdg", "", map[string]string{"XDG_CACHE_HOME": "/xdg", "HOME": "/h"}, "/xdg/batchlet/realcluster-v1.34.4/bin"},
		{"home", "", map[string]string{"HOME": "/h"}, "/h/.cache/batchlet/realcluster-v1.34.4/bin"},
	}
	for _, c := range cases {
		got := peerBinDir(c.flag, func(k string) string { return c.env[k] })
		if got != c.want {
			t.Errorf("%s: peerBinDir = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"etcd": 0o755, "kube-apiserver": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "kube-scheduler"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := missingBinaries(dir)
	want := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	if !slices.Equal(got, want) {
		t.Errorf("missingBinaries = %v, want %v (not executable, absent, a directory)", got, want)
	}
}

func TestStatCPU(t *testing.T) {
	cases := []struct {
		stat string
		want time.Duration
	}{
		{"42 (etcd) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0", 3 * time.Second},
		{"7 (kube scheduler) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond},
		{"garbage", 0},
		{"1 (x) S 1", 0},
	}
	for _, c := range cases {
		if got := statCPU(c.stat); got != c.want {
			t.Errorf("statCPU(%q) = %v, want %v", c.stat, got, c.want)
		}
	}
}

func TestControllerManagerArgs(t *testing.T) {
	base := controllerManagerArgs("/k", 0)
	for _, want := range []string{"--controllers=job,podgc,garbagecollector,nodelifecycle", "--concurrent-job-syncs=50", "--kube-api-qps=1000", "--leader-elect=false"} {
		if !slices.Contains(base, want) {
			t.Errorf("args %v lack %s", base, want)
		}
	}
	if slices.ContainsFunc(base, func(a string) bool { return len(a) > 29 && a[:29] == "--terminated-pod-gc-threshold" }) {
		t.Errorf("threshold 0 passed a --terminated-pod-gc-threshold: %v", base)
	}
	if !slices.Contains(controllerManagerArgs("/k", 500), "--terminated-pod-gc-threshold=500") {
		t.Errorf("threshold 500 not passed")
	}
}

func TestFleetObserver(t *testing.T) {
	job := func(name string, cond batchv1.JobConditionType, status corev1.ConditionStatus, succeeded int32) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: batchv1.JobStatus{Succeeded: succeeded}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: status}}
		}
		return j
	}
	t0 := time.Unix(100, 0)
	cases := []struct {
		name    string
		events  []*batchv1.Job
		done    bool
		wantErr bool
	}{
		{"running jobs do not count", []*batchv1.Job{job("a", "", "", 3), job("b", batchv1.JobComplete, corev1.ConditionFalse, 3)}, false, false},
		{"a repeated Complete counts once", []*batchv1.Job{job("a", batchv1.JobComplete, corev1.ConditionTrue, 10), job("a", batchv1.JobComplete, corev1.ConditionTrue, 10)}, false, false},
		{"both complete", []*batchv1.Job{job("a", batchv1.JobComplete, corev1.ConditionTrue, 10), job("b", batchv1.JobComplete, corev1.ConditionTrue, 10)}, true, false},
		{"a failed job fails the wait", []*batchv1.Job{job("a", batchv1.JobComplete, corev1.ConditionTrue, 10), job("b", batchv1.JobFailed, corev1.ConditionTrue, 9)}, true, true},
	}
	for _, c := range cases {
		f := newFleetObserver(2)
		for i, ev := range c.events {
			f.jobSeen(t0.Add(time.Duration(i)*time.Second), ev)
		}
		select {
		case <-f.done:
			if !c.done {
				t.Errorf("%s: done, want not yet", c.name)
				continue
			}
			at, err := f.wait(t.Context())
			if (err != nil) != c.wantErr {
				t.Errorf("%s: wait error %v, want error %v", c.name, err, c.wantErr)
			}
			if err == nil && !at.Equal(t0.Add(time.Duration(len(c.events)-1)*time.Second)) {
				t.Errorf("%s: done at %v, want the last event's time", c.name, at)
			}
		default:
			if c.done {
				t.Errorf("%s: not done (%s), want done", c.name, f.progress())
			}
		}
	}
}
