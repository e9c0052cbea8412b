package bench

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batchlet/batchlet/controlplane"
)

// apiGroups is how many label groups the stored pods are spread over; a
// selector list returns one group.
const apiGroups = 100

// runAPI stores APIPods Pending pods (no agent), waits for the scheduler to
// have marked them unschedulable, and times full and label-selected lists
// over HTTPS (time to the last byte, as a server
// latency), a decoded typed list, and watch delivery to an informer.
func runAPI(ctx context.Context, r *runner) (Result, error) {
	n, iterations := r.cfg.APIPods, r.cfg.Iterations
	if iterations == 0 {
		iterations = 100
	}
	res := Result{Params: map[string]int{"pods": n, "iterations": iterations, "watchWrites": r.cfg.WatchWrites}}
	dir, cleanup, err := r.tempDir("api")
	if err != nil {
		return res, err
	}
	defer cleanup()
	mem := startMemSampler(r)
	defer mem.finish() // on the error paths; a second finish is harmless
	cp, err := controlplane.Start(ctx, controlplane.Options{DataDir: dir, Port: 0, NoAgent: true, Logger: r.cfg.Logger})
	if err != nil {
		return res, fmt.Errorf("start control plane: %w", err)
	}
	defer shutdown(cp)
	inproc, err := kubernetes.NewForConfig(cp.ClientConfig())
	if err != nil {
		return res, fmt.Errorf("client: %w", err)
	}
	start := time.Now()
	if err := createPods(ctx, inproc, "p", n, 16); err != nil {
		return res, err
	}
	res.add("store pods", float64(n)/time.Since(start).Seconds(), "pods/s")
	r.progress("api: stored %d pods in %s", n, time.Since(start).Round(time.Millisecond))
	if err := waitUnschedulable(ctx, inproc, n, &res); err != nil {
		return res, err
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", controlplane.KubeconfigPath(dir))
	if err != nil {
		return res, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.QPS = -1 // no client-side rate limit: measure the server
	https, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, fmt.Errorf("https client: %w", err)
	}
	pbCfg := rest.CopyConfig(cfg)
	pbCfg.ContentType = k8sruntime.ContentTypeProtobuf
	pbCfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + ",application/json"
	pb, err := kubernetes.NewForConfig(pbCfg)
	if err != nil {
		return res, fmt.Errorf("https protobuf client: %w", err)
	}
	stopProfile, err := r.profile("api", &res)
	if err != nil {
		return res, err
	}
	defer stopProfile()
	u0 := takeUsage()
	if err := timeLists(ctx, https, pb, n, iterations, &res); err != nil {
		return res, err
	}
	if err := timeWatch(ctx, https, r.cfg.WatchWrites, &res); err != nil {
		return res, err
	}
	u1 := takeUsage()
	r.heapProfile("api", &res)
	addMemory(&res, mem.finish(), filepath.Join(dir, controlplane.StoreFile))
	res.add("CPU (server, measured part)", (u1.cpu - u0.cpu).Seconds(), "s")
	p99, _ := res.Metric("list all p99")
	res.Target, res.Met = "list p99 < 20 ms at 10k pods", p99 < 20
	return res, nil
}

// waitUnschedulable waits until the scheduler has marked all n pods
// unschedulable (there is no node), so that its first pass over them (a
// status patch and an event per pod) is not counted in the lists' CPU and
// latency; after 2 minutes it notes how many it saw and goes on.
func waitUnschedulable(ctx context.Context, kube kubernetes.Interface, n int, res *Result) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		marked := 0
		for i := range list.Items {
			for _, c := range list.Items[i].Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					marked++
				}
			}
		}
		if marked >= n {
			return nil
		}
		if time.Now().After(deadline) {
			res.Notes = append(res.Notes, fmt.Sprintf("the scheduler had marked %d of %d pods unschedulable when the lists began", marked, n))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func createPods(ctx context.Context, kube kubernetes.Interface, prefix string, n, workers int) error {
	return inParallel(n, workers, func(i int) error {
		if _, err := kube.CoreV1().Pods("default").Create(ctx, benchPod(prefix, i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s-%d: %w", prefix, i, err)
		}
		return nil
	})
}

// inParallel calls do(i) for i in [0, n) on workers goroutines and
// returns the first error, after which no new call starts.
func inParallel(n, workers int, do func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
		return err
	default:
		return nil
	}
}

func benchPod(prefix string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%06d", prefix, i),
			Labels: map[string]string{"group": fmt.Sprintf("g%d", i%apiGroups), "bench": prefix},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"}}},
		},
	}
}

// timeLists times raw lists (bytes read, not decoded: what the server
// costs) with and without a selector, in JSON (kube, as client-go's
// default, kubectl and most tools ask) and in protobuf (pb, as Kubernetes'
// own components ask), and a few decoded typed lists (what a client-go
// caller waits for). It checks the item counts.
func timeLists(ctx context.Context, kube, pb kubernetes.Interface, n, iterations int, res *Result) error {
	var body bytes.Buffer
	raw := func(rc rest.Interface, selector string) (listTimes, error) {
		lt := listTimes{before: takeUsage(), gcBefore: numGC()}
		for range iterations {
			req := rc.Get().Namespace("default").Resource("pods")
			if selector != "" {
				req = req.Param("labelSelector", selector)
			}
			t := time.Now()
			size, err := readBody(ctx, req, &body)
			lt.ds = append(lt.ds, time.Since(t))
			if err != nil {
				return lt, fmt.Errorf("list pods %q: %w", selector, err)
			}
			lt.size = size
		}
		lt.after, lt.gcAfter = takeUsage(), numGC()
		return lt, nil
	}
	rc := kube.CoreV1().RESTClient()
	all, err := raw(rc, "")
	if err != nil {
		return err
	}
	all.report(res, "list all", iterations)
	res.add("list all size", float64(all.size)/(1<<20), "MB")
	sel, err := raw(rc, "group=g7")
	if err != nil {
		return err
	}
	sel.report(res, "list selector", iterations)
	allPB, err := raw(pb.CoreV1().RESTClient(), "")
	if err != nil {
		return err
	}
	allPB.report(res, "list all protobuf", iterations)
	res.add("list all protobuf size", float64(allPB.size)/(1<<20), "MB")
	pbList, err := pb.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("protobuf list pods: %w", err)
	}
	if len(pbList.Items) != n {
		return fmt.Errorf("protobuf list pods returned %d items, want %d", len(pbList.Items), n)
	}

	var typed []time.Duration
	for range max(iterations/10, 1) {
		t := time.Now()
		list, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		typed = append(typed, time.Since(t))
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		if len(list.Items) != n {
			return fmt.Errorf("list pods returned %d items, want %d", len(list.Items), n)
		}
	}
	res.addDuration("typed list all p50", percentile(typed, 50))
	list, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "group=g7"})
	if err != nil {
		return fmt.Errorf("list pods group=g7: %w", err)
	}
	want := n / apiGroups
	if n%apiGroups > 7 {
		want++
	}
	if len(list.Items) != want {
		return fmt.Errorf("list pods group=g7 returned %d items, want %d", len(list.Items), want)
	}
	res.Checks = append(res.Checks, fmt.Sprintf("list returned %d pods", n), fmt.Sprintf("selector returned %d pods", want), fmt.Sprintf("protobuf list returned %d pods", n))
	return nil
}

// timeWatch creates pods one at a time and times each from the create's
// return to the informer's Add event.
func timeWatch(ctx context.Context, kube kubernetes.Interface, writes int, res *Result) error {
	var mu sync.Mutex
	seen := map[string]time.Time{}
	all := make(chan struct{})
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Labels["bench"] != "w" {
			return
		}
		mu.Lock()
		seen[pod.Name] = time.Now()
		if len(seen) == writes {
			close(all)
		}
		mu.Unlock()
	}}); err != nil {
		return fmt.Errorf("add handler: %w", err)
	}
	ictx, cancel := context.WithCancel(ctx)
	factory.Start(ictx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		return fmt.Errorf("pod informer did not sync")
	}
	sent := make(map[string]time.Time, writes)
	returned := make(map[string]time.Time, writes)
	for i := range writes {
		t := time.Now()
		pod, err := kube.CoreV1().Pods("default").Create(ctx, benchPod("w", i), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create pod w-%d: %w", i, err)
		}
		sent[pod.Name], returned[pod.Name] = t, time.Now()
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("informer saw %d of %d created pods after 30s", len(seen), writes)
	case <-ctx.Done():
		return ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	var fromReturn, fromSend []time.Duration
	early := 0
	for name, t := range returned {
		d := seen[name].Sub(t)
		if d < 0 {
			d, early = 0, early+1
		}
		fromReturn = append(fromReturn, d)
		fromSend = append(fromSend, seen[name].Sub(sent[name]))
	}
	res.addDuration("watch delivery p50", percentile(fromReturn, 50))
	res.addDuration("watch delivery p99", percentile(fromReturn, 99))
	res.addDuration("create call→event p50", percentile(fromSend, 50))
	res.addDuration("create call→event p99", percentile(fromSend, 99))
	res.Checks = append(res.Checks, fmt.Sprintf("informer saw all %d writes", writes))
	if early > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d watch events arrived before the create call returned (delivery counted as 0)", early, writes))
	}
	return nil
}

// listTimes is one series of timed lists: their durations, the last body
// size, and the process's CPU and GC cycles around the series.
type listTimes struct {
	ds                []time.Duration
	size              int
	before, after     usage
	gcBefore, gcAfter uint32
}

// report adds the series' p50/p99 and, as the machine may be shared, the
// CPU of the whole process (server and client) per list and the GC cycles
// that ran during the series.
func (lt *listTimes) report(res *Result, name string, iterations int) {
	res.addDuration(name+" p50", percentile(lt.ds, 50))
	res.addDuration(name+" p99", percentile(lt.ds, 99))
	res.addDuration(name+" CPU per list", (lt.after.cpu-lt.before.cpu)/time.Duration(max(iterations, 1)))
	res.add(name+" GC cycles", float64(lt.gcAfter-lt.gcBefore), "")
}

// readBody sends req and reads the whole response body into buf (reused
// across calls, so that the measuring client's own allocations neither
// slow the read nor drive the garbage collector of the server sharing its
// process), returning the body's size. It stops the clock at the last
// byte, as DoRaw does.
func readBody(ctx context.Context, req *rest.Request, buf *bytes.Buffer) (int, error) {
	rd, err := req.Stream(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rd.Close() }()
	buf.Reset()
	if _, err := buf.ReadFrom(rd); err != nil {
		return 0, fmt.Errorf("read body: %w", err)
	}
	return buf.Len(), nil
}

func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
