package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestConcurrentListsWhileWriting lists more pods than one streamed batch
// holds, in JSON and in protobuf from several clients at once, while
// another client patches them: every answer holds each pod once, with a
// resourceVersion, however the answers share write buffers, candidate
// batches and cached items.
func TestConcurrentListsWhileWriting(t *testing.T) {
	const n = 1500 // over firstStreamBatch + streamBatch
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	if err := inParallelTest(n, 8, func(i int) error {
		_, err := pods.Create(e.ctx, testPod(fmt.Sprintf("p-%04d", i), ""), metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"round":"%d"}}}`, i)
			if _, err := pods.Patch(e.ctx, fmt.Sprintf("p-%04d", i%n), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				writerDone <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for c := range 4 {
		accept := "application/json"
		if c%2 == 1 {
			accept = runtime.ContentTypeProtobuf
		}
		wg.Go(func() {
			for range 5 {
				if err := checkWholeList(e, accept, n); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// checkWholeList lists the default namespace's pods in accept and checks
// that the answer holds n distinct pods, each with a resourceVersion.
func checkWholeList(e *testEnv, accept string, n int) error {
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/api/v1/namespaces/default/pods", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s list: %d %v %s", accept, resp.StatusCode, err, body)
	}
	var list corev1.PodList
	if accept == "application/json" {
		err = json.Unmarshal(body, &list)
	} else {
		_, _, err = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(body, nil, &list)
	}
	if err != nil {
		return fmt.Errorf("%s list: decode: %w", accept, err)
	}
	seen := map[string]bool{}
	for _, p := range list.Items {
		if seen[p.Name] || p.ResourceVersion == "" {
			return fmt.Errorf("%s list: pod %s twice or without resourceVersion", accept, p.Name)
		}
		seen[p.Name] = true
	}
	if len(seen) != n {
		return fmt.Errorf("%s list: %d pods, want %d", accept, len(seen), n)
	}
	return nil
}

// inParallelTest calls do(i) for i in [0, n) on workers goroutines and
// returns the first error.
func inParallelTest(n, workers int, do func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}
