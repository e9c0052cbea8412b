package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
)

// overBolt makes the test servers of t use the durable backend, whose
// lists are walked without copying values.
func overBolt(t *testing.T) {
	prev := newTestBackend
	t.Cleanup(func() { newTestBackend = prev })
	newTestBackend = func(t *testing.T) storage.Backend {
		b, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
}

// TestListPagesAgreeWithFullList pages through pods with and without
// selectors, with some of them cached and some changed since, and checks
// that the pages add up to the full list, in order, with the right
// continue tokens and remaining counts, as objects and as metadata.
func TestListPagesAgreeWithFullList(t *testing.T) {
	for _, store := range []string{"memory", "bolt"} {
		t.Run(store, func(t *testing.T) {
			if store == "bolt" {
				overBolt(t)
			}
			e := newTestEnv(t)
			pods := e.client.CoreV1().Pods("default")
			for i := range 30 {
				p := testPod(fmt.Sprintf("p-%02d", i), "")
				p.Labels["group"] = strconv.Itoa(i % 3)
				if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := pods.List(e.ctx, metav1.ListOptions{}); err != nil { // warms the entry cache
				t.Fatal(err)
			}
			for i := 0; i < 30; i += 4 { // changed since: cache misses, some now in another group
				p, err := pods.Get(e.ctx, fmt.Sprintf("p-%02d", i), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				p.Labels["group"] = strconv.Itoa((i + 1) % 3)
				if _, err := pods.Update(e.ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			meta, err := metadata.NewForConfig(e.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, sel := range []metav1.ListOptions{{}, {LabelSelector: "group=1"}, {LabelSelector: "group!=2", FieldSelector: "metadata.name!=p-05"}, {FieldSelector: "metadata.name=p-13"}} {
				full, err := pods.List(e.ctx, sel)
				if err != nil {
					t.Fatal(err)
				}
				want := podNames(full.Items)
				if err := checkSelected(full.Items, sel); err != nil {
					t.Fatalf("%+v: %v", sel, err)
				}
				for _, limit := range []int64{1, 2, 7, 100} {
					opts := sel
					opts.Limit = limit
					var got []string
					for page := 0; ; page++ {
						l, err := pods.List(e.ctx, opts)
						if err != nil {
							t.Fatalf("%+v page %d: %v", opts, page, err)
						}
						got = append(got, podNames(l.Items)...)
						ml, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default").List(e.ctx, opts)
						if err != nil || len(ml.Items) != len(l.Items) || ml.Continue != l.Continue {
							t.Fatalf("%+v page %d: metadata list %d items, continue %q, %v; objects %d, %q", opts, page, len(ml.Items), ml.Continue, err, len(l.Items), l.Continue)
						}
						if more := len(got) < len(want); (l.Continue != "") != more && !(sel.LabelSelector != "" || sel.FieldSelector != "") {
							t.Fatalf("%+v page %d: continue %q with %d of %d listed", opts, page, l.Continue, len(got), len(want))
						}
						if sel.LabelSelector == "" && sel.FieldSelector == "" && l.Continue != "" {
							if rem := l.RemainingItemCount; rem == nil || *rem != int64(len(want)-len(got)) {
								t.Fatalf("%+v page %d: remainingItemCount %v, want %d", opts, page, rem, len(want)-len(got))
							}
						}
						if l.Continue == "" {
							break
						}
						if int64(len(l.Items)) != limit {
							t.Fatalf("%+v page %d: %d items and a continue token", opts, page, len(l.Items))
						}
						opts.Continue = l.Continue
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("%+v: pages %v, full list %v", opts, got, want)
					}
				}
			}
		})
	}
}

// TestListExactOldRevisionIgnoresNewerCache lists at an older revision after
// the entry cache has the newer versions.
func TestListExactOldRevisionIgnoresNewerCache(t *testing.T) {
	overBolt(t)
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	p, err := pods.Create(e.ctx, testPod("p", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := p.ResourceVersion
	p.Labels["v"] = "new"
	if _, err := pods.Update(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := pods.List(e.ctx, metav1.ListOptions{}); err != nil || l.Items[0].Labels["v"] != "new" {
		t.Fatalf("current list: %v %v", l, err)
	}
	l, err := pods.List(e.ctx, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(l.Items) != 1 || l.Items[0].Labels["v"] != "" || l.Items[0].ResourceVersion != old || l.ResourceVersion != old {
		t.Fatalf("list at %s: %+v %v", old, l, err)
	}
	l, err = pods.List(e.ctx, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact, LabelSelector: "v=new"})
	if err != nil || len(l.Items) != 0 {
		t.Fatalf("selector at %s: %+v %v", old, l, err)
	}
}

func podNames(items []corev1.Pod) []string {
	names := make([]string, len(items))
	for i, p := range items {
		names[i] = p.Name
	}
	return names
}

// checkSelected says whether every pod passes the options' selectors.
func checkSelected(items []corev1.Pod, opts metav1.ListOptions) error {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return err
	}
	for _, p := range items {
		if !sel.Matches(labels.Set(p.Labels)) {
			return fmt.Errorf("pod %s labels %v do not match %q", p.Name, p.Labels, opts.LabelSelector)
		}
	}
	return nil
}

// TestStreamedListMatchesPages lists more pods than one streamed batch
// holds, partly cached and partly changed since, and checks the streamed
// answer (no limit) against the encoded list and against paging.
func TestStreamedListMatchesPages(t *testing.T) {
	overBolt(t)
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	const n = 128 + 1024 + 300 // past genericstore's first two stream batches
	for i := range n {
		p := testPod(fmt.Sprintf("p-%04d", i), "")
		p.Labels["group"] = strconv.Itoa(i % 3)
		if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pods.List(e.ctx, metav1.ListOptions{LabelSelector: "group=1"}); err != nil { // caches a third
		t.Fatal(err)
	}
	for _, sel := range []string{"", "group=1", "group!=0"} {
		q := ""
		if sel != "" {
			q = "?labelSelector=" + url.QueryEscape(sel)
		}
		code, body := e.do(t, "GET", "/api/v1/namespaces/default/pods"+q, "", "", nil, testToken)
		var l corev1.PodList
		if err := json.Unmarshal(body, &l); err != nil || code != 200 {
			t.Fatalf("list %q: %d %.200s", sel, code, body)
		}
		if want, _ := json.Marshal(&l); !bytes.Equal(bytes.TrimSpace(body), want) {
			t.Fatalf("list %q is not the list encoded as a whole", sel)
		}
		var paged []string
		opts := metav1.ListOptions{LabelSelector: sel, Limit: 500}
		for {
			page, err := pods.List(e.ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, podNames(page.Items)...)
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
		if got := podNames(l.Items); fmt.Sprint(got) != fmt.Sprint(paged) || len(got) == 0 {
			t.Fatalf("list %q: streamed %d pods, paged %d", sel, len(got), len(paged))
		}
		if err := checkSelected(l.Items, metav1.ListOptions{LabelSelector: sel}); err != nil {
			t.Fatal(err)
		}
	}
}
