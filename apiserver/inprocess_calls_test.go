package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/inprocclient"
	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/storage/memory"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/dump"
)

// equivEnv is one fresh server and the client under test over it.
type equivEnv struct {
	srv    *Server
	client kubernetes.Interface
	// http reads what is stored, over the in-process transport.
	http kubernetes.Interface
	// fallbacks counts the in-process client's calls that went over HTTP.
	fallbacks *atomic.Int64
}

// newEquivEnv starts a server on a fake clock with a sub-second part (the
// wire keeps whole seconds) and builds its HTTP client (protobuf over the
// in-process transport, as the controllers used) or, with inProc, the
// in-process client over it.
func newEquivEnv(t *testing.T, inProc bool) *equivEnv {
	t.Helper()
	return newEquivEnvWith(t, inProc, Config{Storage: memory.New(1000), Clock: equivClock()})
}

// equivClock is the equivalence tests' fake clock, with a sub-second part.
func equivClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 11, 26, 13, 0, 0, 123456789, time.UTC))
}

// newEquivEnvWith is newEquivEnv of a server made with cfg.
func newEquivEnvWith(t *testing.T, inProc bool, cfg Config) *equivEnv {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	httpClient, err := kubernetes.NewForConfig(srv.InProcessConfig())
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	env := &equivEnv{srv: srv, client: httpClient, http: httpClient, fallbacks: &atomic.Int64{}}
	if inProc {
		cfg := srv.InProcessConfig()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				env.fallbacks.Add(1)
				return rt.RoundTrip(r)
			})
		})
		fallback, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		env.client = inprocclient.New(fallback, srv.InProcessCalls())
	}
	return env
}

// uid is the UID of a stored pod ("" if none).
func (e *equivEnv) uid(ctx context.Context, name string) types.UID {
	p, err := e.http.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.UID
}

// nanoTime is a time with a sub-second part, which the wire drops.
func nanoTime() metav1.Time {
	return metav1.NewTime(time.Date(2026, 11, 26, 13, 0, 1, 987654321, time.UTC))
}

func equivPod(name string) *corev1.Pod {
	p := testPod(name, "")
	p.Annotations = map[string]string{}
	p.Spec.Containers[0].Args = []string{}
	return p
}

// equivOps run in order on both servers; each answers an object (or
// nil) and an error, which must be the same on both.
var equivOps = []struct {
	name string
	op   func(ctx context.Context, e *equivEnv) (runtime.Object, error)
	// stored names the pod, Job or event to compare as stored after op.
	stored string
}{
	{"create pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Create(ctx, equivPod("p1"), metav1.CreateOptions{})
	}, "pods/p1"},
	{"create pod with a field manager", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Create(ctx, equivPod("p2"), metav1.CreateOptions{FieldManager: "job-controller"})
	}, "pods/p2"},
	{"create pod that exists", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Create(ctx, equivPod("p1"), metav1.CreateOptions{})
	}, ""},
	{"create invalid pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p := equivPod("Bad_Name")
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "main"})
		return e.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	}, ""},
	{"create pod in another namespace than the client's", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p := equivPod("p3")
		p.Namespace = "kube-system"
		return e.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	}, ""},
	{"create pod in a missing namespace", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p := equivPod("p3")
		p.Namespace = "nowhere"
		return e.client.CoreV1().Pods("nowhere").Create(ctx, p, metav1.CreateOptions{})
	}, ""},
	{"create pod dry run", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Create(ctx, equivPod("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}, "pods/dry"},
	{"get pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	}, ""},
	{"get missing pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Get(ctx, "missing", metav1.GetOptions{})
	}, ""},
	{"bind pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return nil, e.client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{})
	}, "pods/p1"},
	{"bind bound pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return nil, e.client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-b"}}, metav1.CreateOptions{})
	}, ""},
	{"bind without target", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return nil, e.client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p2"}}, metav1.CreateOptions{})
	}, ""},
	{"patch pod status with UID precondition", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		body := `{"metadata":{"uid":"` + string(e.uid(ctx, "p1")) + `"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-26T13:00:02Z"}]}}`
		return e.client.CoreV1().Pods("default").Patch(ctx, "p1", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
	}, "pods/p1"},
	{"patch pod status with another UID", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		body := `{"metadata":{"uid":"` + string(e.uid(ctx, "p2")) + `"},"status":{"phase":"Running"}}`
		return e.client.CoreV1().Pods("default").Patch(ctx, "p1", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
	}, ""},
	{"patch pod status invalid", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Patch(ctx, "p1", types.MergePatchType, []byte(`{"status":{"phase":"Pending"}}`), metav1.PatchOptions{}, "status")
	}, "pods/p1"},
	{"patch pod status as the agent does", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		body := agentStatusPatch(string(e.uid(ctx, "p1")), 7)
		return e.client.CoreV1().Pods("default").Patch(ctx, "p1", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
	}, "pods/p1"},
	{"patch pod labels and spec (strategic, shares the stored pod)", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		body := `{"metadata":{"labels":{"x":"y"}},"spec":{"activeDeadlineSeconds":60}}`
		return e.client.CoreV1().Pods("default").Patch(ctx, "p2", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
	}, "pods/p2"},
	{"patch pod spec invalidly (strategic, shares the stored pod)", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		body := `{"spec":{"containers":[{"name":"main","image":"other"}],"activeDeadlineSeconds":-1}}`
		return e.client.CoreV1().Pods("default").Patch(ctx, "p2", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
	}, "pods/p2"},
	{"remove a pod finalizer (strategic, shares the stored pod)", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		body := `{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/gone"]}}`
		return e.client.CoreV1().Pods("default").Patch(ctx, "p2", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
	}, "pods/p2"},
	{"patch pod with bad JSON", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Patch(ctx, "p1", types.MergePatchType, []byte(`{"metadata":`), metav1.PatchOptions{})
	}, ""},
	{"patch pod labels with a field manager", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Patch(ctx, "p2", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`), metav1.PatchOptions{FieldManager: "kubectl"})
	}, "pods/p2"},
	{"patch pod with an unknown field, strict", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Patch(ctx, "p2", types.MergePatchType, []byte(`{"metadata":{"labels":{"s":"t"}},"bogus":1}`),
			metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict})
	}, "pods/p2"},
	{"patch pod with an unknown field, ignored", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Patch(ctx, "p2", types.MergePatchType, []byte(`{"metadata":{"labels":{"i":"j"}},"bogus":1}`),
			metav1.PatchOptions{FieldValidation: metav1.FieldValidationIgnore})
	}, "pods/p2"},
	{"patch missing pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Pods("default").Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	}, ""},
	{"update pod status with a stale resourceVersion", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p, err := e.http.CoreV1().Pods("default").Get(ctx, "p2", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		p.ResourceVersion = "2"
		return e.client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}, ""},
	{"update pod status", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p, err := e.http.CoreV1().Pods("default").Get(ctx, "p2", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: nanoTime()}}
		return e.client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}, "pods/p2"},
	{"delete pod with another UID", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		uid := e.uid(ctx, "p1")
		return nil, e.client.CoreV1().Pods("default").Delete(ctx, "p2", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	}, "pods/p2"},
	{"delete pod dry run", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return nil, e.client.CoreV1().Pods("default").Delete(ctx, "p2", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	}, "pods/p2"},
	{"delete pod with a bad propagation policy", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p := metav1.DeletionPropagation("Sideways")
		return nil, e.client.CoreV1().Pods("default").Delete(ctx, "p2", metav1.DeleteOptions{PropagationPolicy: &p})
	}, "pods/p2"},
	{"delete pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return nil, e.client.CoreV1().Pods("default").Delete(ctx, "p2", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))})
	}, "pods/p2"},
	{"delete missing pod", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return nil, e.client.CoreV1().Pods("default").Delete(ctx, "p2", metav1.DeleteOptions{})
	}, ""},
	{"create pod with a finalizer", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		p := equivPod("p4")
		p.Finalizers = []string{"example.com/keep"}
		return e.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	}, "pods/p4"},
	{"delete pod with a finalizer, not orphaning (202)", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		//lint:ignore SA1019 the handler still answers the deprecated orphanDependents with 202
		return nil, e.client.CoreV1().Pods("default").Delete(ctx, "p4", metav1.DeleteOptions{OrphanDependents: ptrTo(false)})
	}, "pods/p4"},
	{"create job", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.BatchV1().Jobs("default").Create(ctx, testJob("j1"), metav1.CreateOptions{})
	}, "jobs/j1"},
	{"update job status", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		j, err := e.http.BatchV1().Jobs("default").Get(ctx, "j1", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		start := nanoTime()
		j.Status.StartTime, j.Status.Active = &start, 1
		j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{}}
		return e.client.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{})
	}, "jobs/j1"},
	{"update job status invalid", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		j, err := e.http.BatchV1().Jobs("default").Get(ctx, "j1", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		j.Status.Active = -1
		return e.client.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{})
	}, "jobs/j1"},
	{"patch job status", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.BatchV1().Jobs("default").Patch(ctx, "j1", types.MergePatchType, []byte(`{"status":{"ready":1}}`), metav1.PatchOptions{}, "status")
	}, "jobs/j1"},
	{"create core event", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "j1.1", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "default", Name: "j1"},
			Reason:         "SuccessfulCreate", Message: "Created pod: p1", Type: corev1.EventTypeNormal, Count: 1,
			FirstTimestamp: nanoTime(), LastTimestamp: nanoTime(), Source: corev1.EventSource{Component: "job-controller"}}
		//lint:ignore SA1019 the core event recorder's sink calls the deprecated form
		return e.client.CoreV1().Events("").CreateWithEventNamespace(ev)
	}, "events/j1.1"},
	{"patch core event", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "j1.1", Namespace: "default"}}
		//lint:ignore SA1019 the core event recorder's sink calls the deprecated form
		return e.client.CoreV1().Events("").PatchWithEventNamespace(ev, []byte(`{"count":2,"lastTimestamp":"2026-11-26T13:00:05Z"}`))
	}, "events/j1.1"},
	{"create core event in another namespace than the client's", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
		//lint:ignore SA1019 the core event recorder's sink calls the deprecated form
		return e.client.CoreV1().Events("kube-system").CreateWithEventNamespace(ev)
	}, ""},
	{"create events.k8s.io event", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "j1.2", Namespace: "default"},
			EventTime: metav1.NewMicroTime(time.Date(2026, 11, 26, 13, 0, 3, 123456789, time.UTC)),
			Regarding: corev1.ObjectReference{Kind: "Job", Namespace: "default", Name: "j1"}, Reason: "Completed",
			Note: "Job completed", Type: corev1.EventTypeNormal, Action: "Complete", ReportingController: "batchlet.dev/job", ReportingInstance: "batchlet.dev/job-x"}
		return e.client.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
	}, "events/j1.2"},
	{"create invalid events.k8s.io event", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "j1.3", Namespace: "default"}}
		return e.client.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
	}, ""},
	{"patch events.k8s.io event", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.EventsV1().Events("default").Patch(ctx, "j1.2", types.StrategicMergePatchType,
			[]byte(`{"series":{"count":2,"lastObservedTime":"2026-11-26T13:00:04.000001Z"}}`), metav1.PatchOptions{})
	}, "events/j1.2"},
}

// equivReadOps are reads the agent's volume set-up makes, run after
// equivOps.
var equivReadOps = []struct {
	name string
	op   func(ctx context.Context, e *equivEnv) (runtime.Object, error)
}{
	{"get configmap", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"ca.crt": "x"}}
		if _, err := e.http.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		return e.client.CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{})
	}},
	{"get missing configmap", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().ConfigMaps("default").Get(ctx, "nope", metav1.GetOptions{})
	}},
	{"get secret", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
		if _, err := e.http.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		return e.client.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	}},
	{"get missing secret", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().Secrets("default").Get(ctx, "nope", metav1.GetOptions{})
	}},
	{"token request without an issuer", func(ctx context.Context, e *equivEnv) (runtime.Object, error) {
		return e.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	}},
}

// equivViaHTTP are the ops the in-process client sends over HTTP: Job
// creates are not served in-process.
var equivViaHTTP = map[string]bool{"create job": true}

// The in-process client answers every served call as the HTTP clientset
// does — the same returned object, the same *apierrors.StatusError —
// and leaves the same objects in the store.
func TestInProcessClientMatchesHTTP(t *testing.T) {
	ctx := context.Background()
	viaHTTP, inProc := newEquivEnv(t, false), newEquivEnv(t, true)
	for _, op := range equivOps {
		wantObj, wantErr := op.op(ctx, viaHTTP)
		before := inProc.fallbacks.Load()
		gotObj, gotErr := op.op(ctx, inProc)
		if sent := inProc.fallbacks.Load() > before; sent != equivViaHTTP[op.name] {
			t.Errorf("%s: sent over HTTP %v, want %v", op.name, sent, equivViaHTTP[op.name])
		}
		compareEquiv(t, op.name+": error", viaHTTP, inProc, errObj(wantErr), errObj(gotErr))
		if wantErr != nil && reflect.TypeOf(wantErr) != reflect.TypeOf(gotErr) {
			t.Errorf("%s: error type %T, want %T", op.name, gotErr, wantErr)
		}
		compareEquiv(t, op.name+": answer", viaHTTP, inProc, wantObj, gotObj)
		if op.stored != "" {
			compareEquiv(t, op.name+": stored", viaHTTP, inProc, stored(ctx, t, viaHTTP, op.stored), stored(ctx, t, inProc, op.stored))
		}
	}
	for _, op := range equivReadOps {
		wantObj, wantErr := op.op(ctx, viaHTTP)
		gotObj, gotErr := op.op(ctx, inProc)
		compareEquiv(t, op.name+": error", viaHTTP, inProc, errObj(wantErr), errObj(gotErr))
		compareEquiv(t, op.name+": answer", viaHTTP, inProc, wantObj, gotObj)
	}
	want, got := requestCounts(t, viaHTTP.srv), requestCounts(t, inProc.srv)
	if len(want) == 0 {
		t.Fatal("the HTTP server counted no requests")
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("apiserver_request_total differs:\nhttp:       %v\nin-process: %v", want, got)
	}
}

// requestCounts is the server's apiserver_request_total by labels.
func requestCounts(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	families, err := s.cfg.Gatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			counts[strings.Join(labels, ",")] = m.GetCounter().GetValue()
		}
	}
	return counts
}

// errObj is an error as comparable data.
func errObj(err error) any {
	if err == nil {
		return nil
	}
	if se, ok := err.(*apierrors.StatusError); ok {
		return se.ErrStatus
	}
	return err.Error()
}

// stored reads kind/name as stored (nil if absent).
func stored(ctx context.Context, t *testing.T, e *equivEnv, ref string) runtime.Object {
	t.Helper()
	kind, name, _ := strings.Cut(ref, "/")
	var obj runtime.Object
	var err error
	switch kind {
	case "pods":
		obj, err = e.http.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	case "jobs":
		obj, err = e.http.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	case "events":
		obj, err = e.http.CoreV1().Events("default").Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read %s: %v", ref, err)
	}
	return obj
}

// compareEquiv compares want (from the HTTP server) and got (from the
// in-process one), UIDs and resourceVersions, which differ between the
// two servers, masked (also inside messages).
func compareEquiv(t *testing.T, what string, wantEnv, gotEnv *equivEnv, want, got any) {
	t.Helper()
	want, got = masked(want, wantEnv), masked(got, gotEnv)
	if isNil(want) && isNil(got) {
		return
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s differs:\nhttp:       %s\nin-process: %s", what, dump.Pretty(want), dump.Pretty(got))
	}
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// masked is v with its UIDs and resourceVersions replaced by
// placeholders.
func masked(v any, e *equivEnv) any {
	switch v := v.(type) {
	case runtime.Object:
		if isNil(v) {
			return nil
		}
		out := v.DeepCopyObject()
		if j, ok := out.(*batchv1.Job); ok {
			maskLabels(j.Labels, j.UID)
			maskLabels(j.Spec.Template.Labels, j.UID)
			if j.Spec.Selector != nil {
				maskLabels(j.Spec.Selector.MatchLabels, j.UID)
			}
		}
		if m, err := meta.Accessor(out); err == nil {
			m.SetUID("UID")
			m.SetResourceVersion("RV")
		}
		return out
	case metav1.Status:
		out := v.DeepCopy()
		for _, name := range []string{"p1", "p2"} {
			if uid := e.uid(context.Background(), name); uid != "" {
				out.Message = strings.ReplaceAll(out.Message, string(uid), "UID-"+name)
				if out.Details != nil {
					for i := range out.Details.Causes {
						c := &out.Details.Causes[i]
						c.Message = strings.ReplaceAll(c.Message, string(uid), "UID-"+name)
					}
				}
			}
		}
		if out.Details != nil {
			out.Details.UID = ""
		}
		return *out
	}
	return v
}

// maskLabels replaces uid in label values (a Job's controller-uid).
func maskLabels(labels map[string]string, uid types.UID) {
	for k, v := range labels {
		if v == string(uid) {
			labels[k] = "UID"
		}
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The in-process results writers (JSON bodies, and objects built without
// encoding) create what the HTTP one does, store the same objects, and
// fail the same way.
func TestInProcessResultsMatchHTTP(t *testing.T) {
	writers := map[string]func(calls *InProcessCalls) results.Writer{
		"json": func(calls *InProcessCalls) results.Writer {
			return results.NewPostWriter(func(ctx context.Context, namespace string, body []byte) error {
				return calls.CreateJSON(ctx, results.GVR, namespace, body, metav1.CreateOptions{})
			})
		},
		"raw": func(calls *InProcessCalls) results.Writer {
			return results.NewRawPostWriter(func(ctx context.Context, namespace string, raw map[string]interface{}) error {
				return calls.CreateRaw(ctx, results.GVR, namespace, raw, metav1.CreateOptions{})
			}, func(ctx context.Context, namespace string, body []byte) error {
				return calls.CreateJSON(ctx, results.GVR, namespace, body, metav1.CreateOptions{})
			})
		},
	}
	for name, newWriter := range writers {
		t.Run(name, func(t *testing.T) { testInProcessResultsMatchHTTP(t, newWriter) })
	}
}

func testInProcessResultsMatchHTTP(t *testing.T, newWriter func(calls *InProcessCalls) results.Writer) {
	ctx := context.Background()
	const maxBody = 64 << 10
	cfg := func() Config {
		return Config{Storage: memory.New(1000), Clock: equivClock(), MaxRequestBodyBytes: maxBody}
	}
	viaHTTP, inProc := newEquivEnvWith(t, false, cfg()), newEquivEnvWith(t, false, cfg())
	httpWriter, err := results.NewWriter(viaHTTP.srv.InProcessConfig())
	if err != nil {
		t.Fatal(err)
	}
	inProcWriter := newWriter(inProc.srv.InProcessCalls())
	result := func(name, logTail string) *results.ContainerResult {
		p := equivPod("p1")
		p.UID = "pod-uid"
		at := results.Attempt{Container: "main", State: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error",
			StartedAt: nanoTime(), FinishedAt: nanoTime()}}
		r := results.New(p, at, logTail, false)
		r.Name = name
		return r
	}
	for _, tc := range []struct {
		name, result, logTail string
		annotate              bool
		fails                 bool
	}{
		{name: "create", result: "p1-main-0", logTail: "last line\n"},
		{name: "create again", result: "p1-main-0", logTail: "last line\n"},
		{name: "invalid UTF-8 and escapes", result: "p1-main-1", logTail: "bad \xff\xfe <&> \u2028 \x00 end"},
		{name: "annotated", result: "p1-main-2", logTail: "x", annotate: true},
		{name: "just under the body limit", result: "p1-main-3", logTail: strings.Repeat("a", maxBody-1024)},
		{name: "over the body limit", result: "p1-main-4", logTail: strings.Repeat("a", maxBody), fails: true},
		{name: "create invalid", result: "Bad_Name", fails: true},
		{name: "create in a missing namespace", result: "nowhere/r", fails: true},
	} {
		want, got := result(tc.result, tc.logTail), result(tc.result, tc.logTail)
		if ns, name, ok := strings.Cut(tc.result, "/"); ok {
			want.Namespace, want.Name, got.Namespace, got.Name = ns, name, ns, name
		}
		if tc.annotate {
			want.Annotations, got.Annotations = map[string]string{"a": "b"}, map[string]string{"a": "b"}
		}
		wantErr, gotErr := httpWriter.Create(ctx, want), inProcWriter.Create(ctx, got)
		if (wantErr != nil) != tc.fails {
			t.Fatalf("%s: over HTTP: %v", tc.name, wantErr)
		}
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Errorf("%s: error %v, want %v", tc.name, gotErr, wantErr)
		}
		var wantSE, gotSE *apierrors.StatusError
		if errors.As(wantErr, &wantSE) != errors.As(gotErr, &gotSE) || (wantSE != nil && !reflect.DeepEqual(wantSE.ErrStatus, gotSE.ErrStatus)) {
			t.Errorf("%s: status error %#v, want %#v", tc.name, gotSE, wantSE)
		}
		wantStored := storedResult(ctx, t, viaHTTP, want)
		if (wantStored == nil) != tc.fails {
			t.Fatalf("%s: stored over HTTP: %v", tc.name, wantStored)
		}
		compareEquiv(t, tc.name+": stored", viaHTTP, inProc, wantStored, storedResult(ctx, t, inProc, got))
	}
}

// storedResult reads r as stored (nil if absent).
func storedResult(ctx context.Context, t *testing.T, e *equivEnv, r *results.ContainerResult) runtime.Object {
	t.Helper()
	client, err := dynamic.NewForConfig(e.srv.InProcessConfig())
	if err != nil {
		t.Fatal(err)
	}
	u, err := client.Resource(results.GVR).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read result %s: %v", r.Name, err)
	}
	return u
}

// PatchVersion writes what Patch writes, fails as it does, counts the same
// requests, and answers the resourceVersion of what it stored.
func TestInProcessPatchVersionMatchesPatch(t *testing.T) {
	ctx := context.Background()
	withPatch, withVersion := newEquivEnv(t, false), newEquivEnv(t, false)
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	for _, e := range []*equivEnv{withPatch, withVersion} {
		if _, err := e.http.CoreV1().Pods("default").Create(ctx, equivPod("p1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	statusPatch := func(e *equivEnv, phase string) []byte {
		return []byte(`{"metadata":{"uid":"` + string(e.uid(ctx, "p1")) + `"},"status":{"phase":"` + phase +
			`","conditions":[{"type":"Ready","status":"False","lastProbeTime":null,"lastTransitionTime":"2026-11-26T13:00:00Z","reason":null,"message":null}]}}`)
	}
	for _, tc := range []struct {
		name, pod, subresource string
		pt                     types.PatchType
		body                   func(e *equivEnv) []byte
		fails                  bool
	}{
		{"strategic status patch", "p1", "status", types.StrategicMergePatchType, func(e *equivEnv) []byte { return statusPatch(e, "Running") }, false},
		{"merge status patch", "p1", "status", types.MergePatchType, func(e *equivEnv) []byte { return statusPatch(e, "Succeeded") }, false},
		{"phase of another type", "p1", "status", types.StrategicMergePatchType, func(*equivEnv) []byte { return []byte(`{"status":{"phase":7}}`) }, true},
		{"invalid JSON", "p1", "status", types.StrategicMergePatchType, func(*equivEnv) []byte { return []byte(`{"status":`) }, true},
		{"missing pod", "p9", "status", types.StrategicMergePatchType, func(*equivEnv) []byte { return []byte(`{"status":{"phase":"Running"}}`) }, true},
		{"unserved subresource", "p1", "binding", types.StrategicMergePatchType, func(*equivEnv) []byte { return []byte(`{}`) }, true},
		{"main resource", "p1", "", types.StrategicMergePatchType, func(*equivEnv) []byte { return []byte(`{"metadata":{"labels":{"a":"b"}}}`) }, false},
	} {
		wantObj, wantErr := withPatch.srv.InProcessCalls().Patch(ctx, pods, "default", tc.pod, tc.pt, tc.body(withPatch), metav1.PatchOptions{}, tc.subresource)
		rv, gotErr := withVersion.srv.InProcessCalls().PatchVersion(ctx, pods, "default", tc.pod, tc.pt, tc.body(withVersion), metav1.PatchOptions{}, tc.subresource)
		if (wantErr != nil) != tc.fails {
			t.Fatalf("%s: Patch: %v", tc.name, wantErr)
		}
		compareEquiv(t, tc.name+": error", withPatch, withVersion, errObj(wantErr), errObj(gotErr))
		want, got := stored(ctx, t, withPatch, "pods/"+tc.pod), stored(ctx, t, withVersion, "pods/"+tc.pod)
		compareEquiv(t, tc.name+": stored", withPatch, withVersion, want, got)
		if wantErr != nil {
			if rv != "" {
				t.Errorf("%s: failed with resourceVersion %q", tc.name, rv)
			}
			continue
		}
		if wantRV := rvOf(wantObj); wantRV != rvOf(want) {
			t.Fatalf("%s: Patch answered resourceVersion %s, stored %s", tc.name, wantRV, rvOf(want))
		}
		if storedRV := rvOf(got); rv != storedRV {
			t.Errorf("%s: PatchVersion answered resourceVersion %q, stored %q", tc.name, rv, storedRV)
		}
	}
	if want, got := requestCounts(t, withPatch.srv), requestCounts(t, withVersion.srv); !reflect.DeepEqual(want, got) {
		t.Errorf("apiserver_request_total differs:\nPatch:        %v\nPatchVersion: %v", want, got)
	}
}

// rvOf is obj's resourceVersion.
func rvOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "no metadata: " + err.Error()
	}
	return m.GetResourceVersion()
}
