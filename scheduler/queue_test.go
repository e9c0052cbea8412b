package scheduler

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestQueueOrder(t *testing.T) {
	q := newQueue()
	older := makePod("older", "")
	older.CreationTimestamp = metav1.NewTime(time.Unix(10, 0))
	q.upsert(makePod("fifo1", ""))
	q.upsert(makePod("fifo2", ""))
	q.upsert(makePod("high", "", withPriority(5)))
	q.upsert(older)
	var got []string
	for range 4 {
		p, _ := q.pop()
		got = append(got, p.Name)
	}
	want := []string{"high", "older", "fifo1", "fifo2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestQueueParksUntilMove(t *testing.T) {
	q := newQueue()
	p := makePod("p", "")
	q.upsert(p)
	q.pop()
	q.unschedulable(p.UID)
	if q.active.Len() != 0 {
		t.Fatal("unschedulable pod must wait for a cluster change")
	}
	q.moveAll()
	if q.active.Len() != 1 {
		t.Fatal("moveAll must reactivate parked pods")
	}
	q.pop()
	q.moveAll() // the cluster changed while the pod was in flight
	q.unschedulable(p.UID)
	if q.active.Len() != 1 {
		t.Error("a pod that failed while the cluster changed must be retried at once")
	}
}
