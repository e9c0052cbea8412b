package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The spliced list answer is byte for byte the list encoded as a whole,
// with and without a label selector, before and after the cache is warm.
func TestListSplicesItemsAsEncodedList(t *testing.T) {
	e := newTestEnv(t)
	for i := 0; i < 6; i++ {
		p := testPod(fmt.Sprintf("p%d", i), "")
		p.Labels["group"] = fmt.Sprint(i % 2)
		if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"", "?labelSelector=group%3D1", "?labelSelector=group%3D1", "?limit=4", "?labelSelector=group%3D9"} {
		code, body := e.do(t, "GET", "/api/v1/namespaces/default/pods"+q, "", "", nil, testToken)
		var l corev1.PodList
		if err := json.Unmarshal(body, &l); err != nil || code != 200 {
			t.Fatalf("list %s: %d %s", q, code, body)
		}
		want, _ := json.Marshal(&l)
		if got := bytes.TrimSpace(body); !bytes.Equal(got, want) {
			t.Fatalf("list %s:\n got %s\nwant %s", q, got, want)
		}
		if bytes.Contains(body, []byte(`"items":[{"kind"`)) || (q == "?labelSelector=group%3D1" && len(l.Items) != 3) {
			t.Fatalf("list %s: %d items: %s", q, len(l.Items), body)
		}
	}
}
