package ttl

import (
	"context"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func finishedJob(ttl *int32, condType batch.JobConditionType, at time.Time) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "uid-1", ResourceVersion: "7"},
		Spec:       batch.JobSpec{TTLSecondsAfterFinished: ttl},
		Status: batch.JobStatus{Conditions: []batch.JobCondition{
			{Type: condType, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)},
		}},
	}
}

func TestTimeLeft(t *testing.T) {
	cases := map[string]struct {
		job     *batch.Job
		want    time.Duration
		wantErr bool
	}{
		"complete, ttl 100, finished 10s ago": {job: finishedJob(ptr.To[int32](100), batch.JobComplete, epoch.Add(-10*time.Second)), want: 90 * time.Second},
		"failed, ttl 0":                       {job: finishedJob(ptr.To[int32](0), batch.JobFailed, epoch), want: 0},
		"expired long ago":                    {job: finishedJob(ptr.To[int32](5), batch.JobComplete, epoch.Add(-time.Minute)), want: -55 * time.Second},
		"no ttl":                              {job: finishedJob(nil, batch.JobComplete, epoch), wantErr: true},
		"not finished":                        {job: finishedJob(ptr.To[int32](5), batch.JobSuspended, epoch), wantErr: true},
		"zero finish time":                    {job: finishedJob(ptr.To[int32](5), batch.JobComplete, time.Time{}), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _, err := timeLeft(tc.job, epoch)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("timeLeft = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeletesAfterTTLWithPreconditions(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	job := finishedJob(ptr.To[int32](30), batch.JobComplete, epoch)
	client := fake.NewClientset(job)
	deletes := make(chan metav1.DeleteOptions, 1)
	client.PrependReactor("delete", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes <- a.(k8stesting.DeleteActionImpl).DeleteOptions
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(epoch.Add(10 * time.Second))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(controllerctx.Context{Client: client, Informers: factory, Clock: clk}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	go func() { _ = c.Run(ctx, 1) }()
	// Before the TTL: the controller waits on the (fake) clock.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-deletes:
		t.Fatal("deleted before the TTL expired")
	default:
	}
	clk.Step(20 * time.Second)
	opts := <-deletes
	if opts.Preconditions == nil || *opts.Preconditions.UID != "uid-1" || *opts.Preconditions.ResourceVersion != "7" {
		t.Errorf("preconditions %+v", opts.Preconditions)
	}
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("propagation %v", opts.PropagationPolicy)
	}
}
