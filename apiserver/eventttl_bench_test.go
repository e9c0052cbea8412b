package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/storage/bolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// eventBenchEvents is how many events the expiry benchmark stores (one
// Scheduled event per pod of a 10,000-pod run, all within the TTL).
const eventBenchEvents = 10000

// BenchmarkEventExpiryPass is one pass of the event TTL loop over stored
// events none of which is due: the cost the loop pays each minute.
func BenchmarkEventExpiryPass(b *testing.B) {
	store, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	srv, err := New(Config{Storage: store, Clock: clock, EventTTL: time.Hour, Authenticator: endpoints.TokenMap{testToken: endpoints.AdminUser()}})
	if err != nil {
		b.Fatal(err)
	}
	client, err := newClientFor(srv)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Passes as the loop takes them: one at the start, one a second
	// later after a write, then the events written half an hour later,
	// and the pass measured an hour after the start (none is due, the
	// pass still looks at all of them).
	expirer := srv.eventExpirer()
	if err := expirer.ExpireOnce(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bump"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	clock.SetTime(start.Add(time.Second))
	if err := expirer.ExpireOnce(ctx); err != nil {
		b.Fatal(err)
	}
	clock.SetTime(start.Add(30 * time.Minute))
	err = inParallelTest(eventBenchEvents, 8, func(i int) error {
		name := fmt.Sprintf("p-%06d", i)
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name + ".18a2b3c4d5e6f708"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: "0b6c2a8e-4f3d-4a8e-9c1b-2d3e4f5a6b7c"},
			Reason:         "Scheduled", Message: "Successfully assigned default/" + name + " to node-1", Type: corev1.EventTypeNormal,
			EventTime: metav1.NewMicroTime(clock.Now()), ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-node-1", Action: "Binding"}
		_, err := client.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	clock.SetTime(start.Add(61 * time.Minute))
	for b.Loop() {
		if err := expirer.ExpireOnce(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
