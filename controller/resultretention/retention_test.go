package resultretention

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/results"
)

func result(ns, name string, created time.Time) runtime.Object {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: results.Group + "/" + results.Version, Kind: results.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
	}
}

func newMetaClient(t *testing.T, objs ...runtime.Object) *metadatafake.FakeMetadataClient {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return metadatafake.NewSimpleMetadataClient(scheme, objs...)
}

func TestSweep(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	objs := []runtime.Object{
		result("a", "fresh", now.Add(-time.Minute)),
		result("a", "day-old", now.Add(-24*time.Hour)),
		result("b", "week-old", now.Add(-8*24*time.Hour)),
	}
	cases := []struct {
		name string
		opts Options
		want []string // kept
	}{
		{"defaults: seven days", Options{}, []string{"a/day-old", "a/fresh"}},
		{"short age", Options{Retention: results.Retention{MaxAge: time.Hour}}, []string{"a/fresh"}},
		{"count keeps the newest", Options{Retention: results.Retention{MaxAge: -1, MaxCount: 2}}, []string{"a/day-old", "a/fresh"}},
		{"no bounds", Options{Retention: results.Retention{MaxAge: -1, MaxCount: -1}}, []string{"a/day-old", "a/fresh", "b/week-old"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := newMetaClient(t, objs...)
			c, err := New(controllerctx.Context{Metadata: meta, Clock: clocktesting.NewFakeClock(now)}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			l, err := meta.Resource(results.GVR).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, it := range l.Items {
				kept = append(kept, it.Namespace+"/"+it.Name)
			}
			sort.Strings(kept)
			if !reflect.DeepEqual(kept, tc.want) {
				t.Errorf("kept %v, want %v", kept, tc.want)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	cases := []struct {
		age  time.Duration
		want time.Duration
	}{
		{0, time.Minute}, // the default seven days
		{5 * time.Minute, 30 * time.Second},
		{3 * time.Second, time.Second},
		{-1, time.Second}, // no age bound: count only
	}
	for _, tc := range cases {
		c, err := New(controllerctx.Context{Metadata: newMetaClient(t)},
			Options{Retention: results.Retention{MaxAge: tc.age}})
		if err != nil {
			t.Fatal(err)
		}
		if c.opts.Interval != tc.want {
			t.Errorf("age %s: interval %s, want %s", tc.age, c.opts.Interval, tc.want)
		}
	}
}

// A sweep over several pages sizes its selection by the count the first
// page reports and still deletes the oldest beyond MaxCount.
func TestSweepPaged(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var objs []runtime.Object
	for i := range 5 {
		objs = append(objs, result("a", fmt.Sprintf("r%d", i), now.Add(-time.Duration(i)*time.Minute)))
	}
	meta := newMetaClient(t, objs...)
	// Pages of two, in name order, with the count of those left (the fake
	// does not pass the continue token on, so the reactor counts calls).
	start := 0
	meta.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		defer func() { start += 2 }()
		l := &metav1.List{}
		for i := start; i < min(start+2, len(objs)); i++ {
			l.Items = append(l.Items, runtime.RawExtension{Object: objs[i]})
		}
		if left := int64(len(objs) - start - len(l.Items)); left > 0 {
			l.Continue, l.RemainingItemCount = strconv.Itoa(start+2), &left // any token
		}
		return true, l, nil
	})
	c, err := New(controllerctx.Context{Metadata: meta, Clock: clocktesting.NewFakeClock(now)},
		Options{Retention: results.Retention{MaxAge: -1, MaxCount: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range meta.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	if want := []string{"r4", "r3"}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("deleted %v, want the two oldest %v", deleted, want)
	}
}
