package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetfake "sigs.k8s.io/jobset/client-go/clientset/versioned/fake"
)

const testToken = "admin-token"

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fixture struct {
	d       *Dashboard
	kube    *kubefake.Clientset
	clock   *clocktesting.FakeClock
	handler http.Handler
}

// newFixture runs a dashboard over fake clientsets holding objs and waits
// until its caches synced.
func newFixture(t *testing.T, kubeObjs []runtime.Object, jobSets ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{kube: kubefake.NewClientset(kubeObjs...), clock: clocktesting.NewFakeClock(t0)}
	d, err := New(Config{Token: testToken, Kube: f.kube, JobSets: jobsetfake.NewSimpleClientset(jobSets...), Clock: f.clock, UpdateInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.d, f.handler = d, d.Handler()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return d.store.isReady(), nil
	}); err != nil {
		t.Fatalf("caches did not sync: %v", err)
	}
	return f
}

func (f *fixture) do(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

func bearer(path string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req
}

func TestLoginCodeWorksOnce(t *testing.T) {
	f := newFixture(t, nil)
	code, err := f.d.LoginCode()
	if err != nil {
		t.Fatal(err)
	}
	first := f.do(httptest.NewRequest(http.MethodGet, "/ui/login?code="+url.QueryEscape(code), nil))
	if first.Code != http.StatusSeeOther || first.Header().Get("Location") != "/ui/" {
		t.Fatalf("first use: %d to %q, want 303 to /ui/", first.Code, first.Header().Get("Location"))
	}
	cookies := first.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v, want one", cookies)
	}
	c := cookies[0]
	if c.Name != SessionCookie || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui" || c.MaxAge != 86400 {
		t.Errorf("cookie %+v: want %s, HttpOnly, Secure, SameSite=Strict, Path=/ui, 24 h", c, SessionCookie)
	}
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.AddCookie(c)
	if rec := f.do(req); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "app.js") {
		t.Errorf("/ui/ with the session: %d, want the app", rec.Code)
	}
	again := f.do(httptest.NewRequest(http.MethodGet, "/ui/login?code="+url.QueryEscape(code), nil))
	if again.Code != http.StatusSeeOther || again.Header().Get("Location") != "/ui/login?error=code" || len(again.Result().Cookies()) != 0 {
		t.Errorf("second use: %d to %q with cookies %v, want a refusal", again.Code, again.Header().Get("Location"), again.Result().Cookies())
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, nil)
	login := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return f.do(req)
	}
	if rec := login("wrong"); rec.Header().Get("Location") != "/ui/login?error=token" || len(rec.Result().Cookies()) != 0 {
		t.Errorf("wrong token logged in: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	session := login(testToken).Result().Cookies()
	if len(session) != 1 {
		t.Fatalf("token login set cookies %v, want a session", session)
	}
	withCookie := func(path string) *http.Request {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(session[0])
		return req
	}
	withHeader := func(path, header string) *http.Request {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", header)
		return req
	}
	tests := []struct {
		name     string
		req      *http.Request
		code     int
		location string
	}{
		{"page without credentials goes to the login page", httptest.NewRequest(http.MethodGet, "/ui/", nil), http.StatusSeeOther, "/ui/login"},
		{"/ui goes to /ui/", httptest.NewRequest(http.MethodGet, "/ui", nil), http.StatusSeeOther, "/ui/"},
		{"login page is public", httptest.NewRequest(http.MethodGet, "/ui/login", nil), http.StatusOK, ""},
		{"assets are public", httptest.NewRequest(http.MethodGet, "/ui/static/style.css", nil), http.StatusOK, ""},
		{"assets are not listed", bearer("/ui/static/"), http.StatusNotFound, ""},
		{"API without credentials", httptest.NewRequest(http.MethodGet, "/ui/api/jobs", nil), http.StatusUnauthorized, ""},
		{"API with a wrong bearer token", withHeader("/ui/api/jobs", "Bearer nope"), http.StatusUnauthorized, ""},
		{"API with basic auth", withHeader("/ui/api/jobs", "Basic "+testToken), http.StatusUnauthorized, ""},
		{"API with the admin token", bearer("/ui/api/jobs"), http.StatusOK, ""},
		{"API with the session", withCookie("/ui/api/jobs"), http.StatusOK, ""},
		{"page with the admin token", bearer("/ui/"), http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := f.do(tt.req)
			if rec.Code != tt.code || rec.Header().Get("Location") != tt.location {
				t.Errorf("%d to %q, want %d to %q", rec.Code, rec.Header().Get("Location"), tt.code, tt.location)
			}
			if rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("missing security headers: %v", rec.Header())
			}
		})
	}
	f.clock.Step(25 * time.Hour)
	if rec := f.do(withCookie("/ui/api/jobs")); rec.Code != http.StatusUnauthorized {
		t.Errorf("expired session: %d, want 401", rec.Code)
	}
	logout := httptest.NewRequest(http.MethodPost, "/ui/logout", nil)
	logout.AddCookie(session[0])
	if rec := f.do(logout); rec.Code != http.StatusSeeOther || rec.Result().Cookies()[0].MaxAge >= 0 {
		t.Errorf("logout: %d %v, want the cookie removed", rec.Code, rec.Result().Cookies())
	}
}

func indexedJob() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "idx", UID: "job-uid", CreationTimestamp: metav1.NewTime(t0)},
		Spec: batchv1.JobSpec{Completions: ptr.To[int32](5), Parallelism: ptr.To[int32](2),
			CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimitPerIndex: ptr.To[int32](1)},
		Status: batchv1.JobStatus{Active: 1, Succeeded: 1, Failed: 2, CompletedIndexes: "0", FailedIndexes: ptr.To("1"),
			Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "FailedIndexes", Message: "Job has failed indexes"}}},
	}
}

// controlledBy is a controller reference to an object of uid.
func controlledBy(kind string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: "owner", UID: uid, Controller: ptr.To(true)}}
}

func indexPod(name string, index string, phase corev1.PodPhase, created time.Time, exit *int32) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: controlledBy("Job", "job-uid"),
			Labels:          map[string]string{batchv1.JobNameLabel: "idx"},
			Annotations:     map[string]string{batchv1.JobCompletionIndexAnnotation: index}},
		Spec:   corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: phase, StartTime: ptr.To(metav1.NewTime(created.Add(time.Second)))},
	}
	if exit != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: *exit, Reason: map[bool]string{true: "Completed", false: "Error"}[*exit == 0], FinishedAt: metav1.NewTime(created.Add(3 * time.Second))}}}}
	}
	return p
}

func TestJobDetail(t *testing.T) {
	// A pod an earlier Job of the same name left behind is not this Job's.
	earlierJobsPod := indexPod("idx-3-old", "3", corev1.PodFailed, t0, ptr.To[int32](1))
	earlierJobsPod.OwnerReferences = controlledBy("Job", "earlier-uid")
	f := newFixture(t, []runtime.Object{
		indexedJob(),
		indexPod("idx-0-a", "0", corev1.PodSucceeded, t0, ptr.To[int32](0)),
		indexPod("idx-1-a", "1", corev1.PodFailed, t0, ptr.To[int32](3)),
		indexPod("idx-1-b", "1", corev1.PodFailed, t0.Add(5*time.Second), ptr.To[int32](3)),
		indexPod("idx-2-a", "2", corev1.PodRunning, t0, nil),
		earlierJobsPod,
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e1"}, Type: corev1.EventTypeNormal, Reason: "SuccessfulCreate",
			Message: "Created pod: idx-0-a", Count: 1, LastTimestamp: metav1.NewTime(t0),
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: "idx", UID: "job-uid"}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e0"}, Type: corev1.EventTypeNormal, Reason: "Completed",
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: "idx", UID: "earlier-uid"}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e2"}, Type: corev1.EventTypeNormal, Reason: "Started",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "idx-0-a"}},
	})
	rec := f.do(bearer("/ui/api/jobs/ns/idx?from=1"))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var d JobDetail
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Cells != "sfrpp" {
		t.Errorf("cells %q, want sfrpp", d.Cells)
	}
	wantCounts := map[string]int{"pending": 2, "running": 1, "succeeded": 1, "failed": 1}
	for k, v := range wantCounts {
		if d.Counts[k] != v {
			t.Errorf("counts %v, want %v", d.Counts, wantCounts)
			break
		}
	}
	if d.Job.Status != "Running" || d.Job.Mode != "Indexed" || d.FailedIndexes != "1" || d.From != 1 || d.TimelineRows != 5 || len(d.Timeline) != 4 {
		t.Errorf("detail %+v", d)
	}
	if row := d.Timeline[0]; row.Index != 1 || len(row.Pods) != 2 || row.Pods[1].Name != "idx-1-b" || *row.Pods[1].ExitCode != 3 || row.Pods[1].Reason != "Error" {
		t.Errorf("timeline of index 1: %+v", row)
	}
	if len(d.Events) != 1 || d.Events[0].Reason != "SuccessfulCreate" {
		t.Errorf("events %+v, want the Job's SuccessfulCreate only", d.Events)
	}
	if rec := f.do(bearer("/ui/api/jobs/ns/missing")); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `jobs.batch \"missing\" not found`) {
		t.Errorf("missing Job: %d %s", rec.Code, rec.Body)
	}
}

func TestJobCellsNonIndexed(t *testing.T) {
	tests := []struct {
		name        string
		completions *int32
		status      batchv1.JobStatus
		pods        int
		want        string
	}{
		{"succeeded first, then active", ptr.To[int32](4), batchv1.JobStatus{Succeeded: 1, Active: 2}, 0, "srrp"},
		{"work queue sizes by its pods", nil, batchv1.JobStatus{Succeeded: 1}, 3, "spp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: batchv1.JobSpec{Completions: tt.completions}, Status: tt.status}
			pods := make([]*corev1.Pod, tt.pods)
			var got strings.Builder
			for _, c := range jobCells(j, pods) {
				got.WriteByte(cellLetters[c.State])
			}
			if got.String() != tt.want {
				t.Errorf("cells %q, want %q", got.String(), tt.want)
			}
		})
	}
}

func TestJobSetDetail(t *testing.T) {
	js := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js", UID: "js-uid"},
		Spec:       jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "leader", Replicas: 1}, {Name: "workers", Replicas: 2}}},
		Status: jobsetv1alpha2.JobSetStatus{Restarts: 1,
			Conditions:           []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "AllJobsCompleted"}},
			ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{{Name: "workers", Succeeded: 2}}},
	}
	child := func(name string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: "js"},
			OwnerReferences: controlledBy("JobSet", "js-uid")}}
	}
	orphan := child("js-workers-2")
	orphan.OwnerReferences = controlledBy("JobSet", "earlier-uid")
	f := newFixture(t, []runtime.Object{child("js-workers-1"), child("js-leader-0"), child("js-workers-0"), orphan,
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "x", Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: "js"}}}}, js)
	rec := f.do(bearer("/ui/api/jobsets/ns/js"))
	var d JobSetDetail
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if d.JobSet.Status != "Completed" || d.JobSet.Jobs != 3 || d.JobSet.Restarts != 1 || len(d.ReplicatedJobs) != 2 || d.ReplicatedJobs[1].Succeeded != 2 {
		t.Errorf("detail %+v", d)
	}
	var names []string
	for _, j := range d.Jobs {
		names = append(names, j.Name)
		if j.JobSet != "js" {
			t.Errorf("job %s names JobSet %q", j.Name, j.JobSet)
		}
	}
	if strings.Join(names, ",") != "js-leader-0,js-workers-0,js-workers-1" {
		t.Errorf("child Jobs %v", names)
	}
	var list []JobSetRow
	if err := json.Unmarshal(f.do(bearer("/ui/api/jobsets")).Body.Bytes(), &list); err != nil || len(list) != 1 || list[0].Name != "js" {
		t.Errorf("list %+v %v", list, err)
	}
}

func TestLogs(t *testing.T) {
	f := newFixture(t, []runtime.Object{indexPod("idx-0-a", "0", corev1.PodRunning, t0, nil)})
	rec := f.do(bearer("/ui/api/logs/ns/idx-0-a?container=main&follow=1"))
	// The fake clientset answers every log request with "fake logs".
	if rec.Code != http.StatusOK || rec.Body.String() != "fake logs" || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("logs: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
}

func TestWatchStreamsChanges(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ui/api/watch", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 16)
	go readEvents(resp.Body, events)
	if got := <-events; got != "hello {}" {
		t.Fatalf("first event %q, want hello", got)
	}
	if _, err := f.kube.BatchV1().Jobs("ns").Create(context.Background(), indexedJob(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The stream writes at most once per tick: tick until the change shows.
	deadline := time.After(10 * time.Second)
	for {
		f.clock.Step(time.Second)
		select {
		case got := <-events:
			if got != `change ["jobs"]` {
				t.Fatalf("event %q, want a change of jobs", got)
			}
			return
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no change event")
		}
	}
}

// readEvents sends "event data" for each server-sent event of r.
func readEvents(r io.Reader, out chan<- string) {
	sc := bufio.NewScanner(r)
	var name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && name != "":
			out <- name + " " + data
			name, data = "", ""
		}
	}
	close(out)
}

func TestLoginURL(t *testing.T) {
	f := newFixture(t, nil)
	if rec := f.do(httptest.NewRequest(http.MethodPost, "/ui/api/login-url", nil)); rec.Code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", rec.Code)
	}
	first, err := f.d.LoginCode()
	if err != nil {
		t.Fatal(err)
	}
	req := bearer("/ui/api/login-url")
	req.Method, req.Host = http.MethodPost, "example.test:6443"
	rec := f.do(req)
	var u LoginURL
	if err := json.Unmarshal(rec.Body.Bytes(), &u); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	code, ok := strings.CutPrefix(u.URL, "https://example.test:6443/ui/login?code=")
	if !ok {
		t.Fatalf("URL %q", u.URL)
	}
	if f.d.auth.redeemCode(first) {
		t.Error("the previous unused code still works")
	}
	if !f.d.auth.redeemCode(code) {
		t.Error("the new code does not work")
	}
}
