package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dashboardJob is an Indexed Job with a deterministic outcome: every index
// ending in 3 fails (once: backoffLimitPerIndex 0), the others succeed.
const dashboardJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: idx100
spec:
  completions: 100
  parallelism: 20
  completionMode: Indexed
  backoffLimitPerIndex: 0
  maxFailedIndexes: 100
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo index $JOB_COMPLETION_INDEX; if [ $((JOB_COMPLETION_INDEX % 10)) = 3 ]; then echo failing index $JOB_COMPLETION_INDEX; exit 3; fi"]
`

// dashboardLaterJob stays suspended: its row's status is deterministic.
const dashboardLaterJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: later
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
`

// dashboardJobSet completes at once: one leader, two workers.
const dashboardJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: pair
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox, command: ["true"]}]
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox, command: ["true"]}]
`

// hideVolatile hides what depends on when things ran (ages, durations,
// timeline bars, generated pod names) before screenshots; a constructed
// style sheet passes the page's Content-Security-Policy.
const hideVolatile = `(() => {
  const s = new CSSStyleSheet();
  s.replaceSync(".volatile { visibility: hidden !important; }");
  document.adoptedStyleSheets = [s];
  return true;
})()`

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (Debian: apt-get install chromium): the dashboard's browser test needs it")
	return ""
}

// loginURL waits for the one-time login URL the server prints after start.
func (s *server) loginURL(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`dashboard: (https://\S+/ui/login\?code=\S+)`)
	var url string
	eventually(t, 30*time.Second, "the dashboard login URL", func() bool {
		if m := re.FindStringSubmatch(s.log.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	return url
}

// browser starts headless Chromium with a pinned window (1280 × 900,
// scale 1), trusting any certificate; run runs actions in its tab, failing
// the test on an error.
func browser(t *testing.T, chrome string) (run func(what string, actions ...chromedp.Action)) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.Flag("hide-scrollbars", true), chromedp.Flag("font-render-hinting", "none"),
		chromedp.Flag("lang", "en-US"), chromedp.Env("TZ=UTC"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancel)
	return func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

func TestDashboard(t *testing.T) {
	chrome := chromiumPath(t)
	s := startServer(t)
	login := s.loginURL(t)
	s.applyYAML(dashboardJob)
	s.waitCondition("job/idx100", "Failed", 3*time.Minute)

	run := browser(t, chrome)

	// The login URL sets the session and lands on the lists.
	var rows []map[string]string
	run("log in and open the Job list",
		chromedp.Navigate(login),
		// The dashboard's informers may trail kubectl wait by a moment.
		chromedp.WaitVisible(`#jobs-table tr[data-job="default/idx100"][data-status="Failed"]`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("#jobs-table tbody tr")].map(tr => {
			const c = [...tr.cells].map(td => td.textContent);
			return {job: tr.dataset.job, status: c[2], mode: c[3], completions: c[4], active: c[5], failed: c[6]};
		})`, &rows))
	want := map[string]string{"job": "default/idx100", "status": "Failed", "mode": "Indexed", "completions": "90/100", "active": "0", "failed": "10"}
	if len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprint(want) {
		t.Errorf("Job list rows %v, want [%v]", rows, want)
	}
	var listShot []byte
	run("screenshot the Job list", chromedp.Evaluate(hideVolatile, nil), chromedp.Screenshot("#jobs-table", &listShot, chromedp.ByQuery))
	compareGolden(t, "jobs-table", listShot)

	// The list is live: a Job created now shows up without a reload.
	s.applyYAML(dashboardLaterJob)
	var status string
	run("see a new Job appear",
		chromedp.WaitVisible(`#jobs-table tr[data-job="default/later"]`, chromedp.ByQuery),
		chromedp.Text(`#jobs-table tr[data-job="default/later"] .badge`, &status, chromedp.ByQuery))
	if status != "Suspended" {
		t.Errorf("new Job's status %q, want Suspended", status)
	}

	// The Job page: its grid, legend and summary.
	var cells, legend, conditions string
	run("open the Job page",
		chromedp.Navigate(login[:strings.Index(login, "/ui/login")]+"/ui/#/job/default/idx100"),
		chromedp.WaitVisible(`#grid[data-cells]`, chromedp.ByQuery),
		chromedp.AttributeValue("#grid", "data-cells", &cells, nil, chromedp.ByQuery),
		chromedp.Text("#legend", &legend, chromedp.ByQuery),
		chromedp.Text("#job-summary .conditions", &conditions, chromedp.ByQuery))
	if want := strings.Repeat("sssfssssss", 10); cells != want {
		t.Errorf("grid cells %q, want %q", cells, want)
	}
	if want := "pending 0 running 0 succeeded 90 failed 10"; strings.Join(strings.Fields(legend), " ") != want {
		t.Errorf("legend %q, want %q", legend, want)
	}
	for _, w := range []string{"FailureTarget", "FailedIndexes", "Job has failed indexes"} {
		if !strings.Contains(conditions, w) {
			t.Errorf("conditions %q lack %q", conditions, w)
		}
	}
	var gridShot, summaryShot []byte
	run("screenshot the Job page", chromedp.Evaluate(hideVolatile, nil),
		chromedp.Screenshot("#grid-box", &gridShot, chromedp.ByQuery),
		chromedp.Screenshot("#job-summary", &summaryShot, chromedp.ByQuery))
	compareGolden(t, "job-grid", gridShot)
	compareGolden(t, "job-summary", summaryShot)

	// Clicking index 13 shows its row in the timeline and its log.
	var exit, log string
	run("click a failed index",
		chromedp.MouseClickXY(0, 0), // focus the page
		chromedp.ActionFunc(func(ctx context.Context) error {
			return chromedp.Evaluate(`(() => {
				const c = document.getElementById("grid"), r = c.getBoundingClientRect(), size = +c.dataset.size, cols = +c.dataset.cols;
				const i = 13, x = r.left + (i % cols) * size + 2, y = r.top + Math.floor(i / cols) * size + 2;
				c.dispatchEvent(new MouseEvent("click", {clientX: x, clientY: y, bubbles: true}));
				return true;
			})()`, nil).Do(ctx)
		}),
		chromedp.WaitVisible(`#timeline tr.selected[data-index="13"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#timeline tr[data-index="13"] td:nth-child(5)').textContent !== ""`, nil, chromedp.WithPollingTimeout(time.Minute)),
		chromedp.Text(`#timeline tr[data-index="13"] td:nth-child(5)`, &exit, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("log").textContent.includes("failing index 13")`, nil, chromedp.WithPollingTimeout(time.Minute)),
		chromedp.Text("#log", &log, chromedp.ByQuery))
	if exit != "3" {
		t.Errorf("index 13's exit code in the timeline = %q, want 3", exit)
	}
	if !strings.Contains(log, "index 13\n") {
		t.Errorf("log of index 13 = %q", log)
	}
	var page []byte
	run("screenshot the whole Job page", chromedp.FullScreenshot(&page, 100)) // quality 100: PNG
	writeArtifact(t, "job-page.png", page)

	// The JobSet page: its replicated Jobs and child Jobs.
	s.applyYAML(dashboardJobSet)
	s.waitCondition("jobset/pair", "Completed", 3*time.Minute)
	var replicated, children []string
	run("open the JobSet page",
		chromedp.Navigate(login[:strings.Index(login, "/ui/login")]+"/ui/#/jobset/default/pair"),
		chromedp.WaitVisible(`#jobset-summary .badge[data-status="Completed"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelectorAll('tr[data-job][data-status="Complete"]').length === 3`, nil, chromedp.WithPollingTimeout(time.Minute)),
		chromedp.Evaluate(`[...document.querySelectorAll("tr[data-replicated-job]")].map(tr => [...tr.cells].map(td => td.textContent).join(" "))`, &replicated),
		chromedp.Evaluate(`[...document.querySelectorAll("tr[data-job]")].map(tr => tr.dataset.job + " " + tr.dataset.status)`, &children))
	// name, replicas, ready, active, succeeded, failed, suspended
	if want := []string{"leader 1 0 0 1 0 0", "workers 2 0 0 2 0 0"}; fmt.Sprint(replicated) != fmt.Sprint(want) {
		t.Errorf("replicated Jobs %q, want %q", replicated, want)
	}
	if want := []string{"default/pair-leader-0 Complete", "default/pair-workers-0 Complete", "default/pair-workers-1 Complete"}; fmt.Sprint(children) != fmt.Sprint(want) {
		t.Errorf("child Jobs %q, want %q", children, want)
	}

	// The login URL worked once.
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/ui/login?error=code" || len(resp.Cookies()) != 0 {
		t.Errorf("second use of the login URL: %d to %q with cookies %v, want a refusal", resp.StatusCode, loc, resp.Cookies())
	}

	// batchlet dashboard prints a new one.
	out, err := exec.Command(binary, "dashboard", "--kubeconfig", s.kubeconfig).Output()
	if err != nil {
		t.Fatalf("batchlet dashboard: %v", err)
	}
	fresh := strings.TrimSpace(string(out))
	if resp, err = client.Get(fresh); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/ui/" || len(resp.Cookies()) != 1 {
		t.Errorf("login URL %q of batchlet dashboard: %d to %q with cookies %v, want a session", fresh, resp.StatusCode, loc, resp.Cookies())
	}
}

// goldenDir holds the dashboard's reference screenshots; set
// BATCHLET_UPDATE_GOLDENS=1 to rewrite them.
const goldenDir = "testdata/dashboard"

// compareGolden compares a PNG screenshot with its golden: same size, and
// at most 1% of the pixels differing by more than 48 in a channel (font
// rasterisation differs a little between machines).
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name+".png")
	if os.Getenv("BATCHLET_UPDATE_GOLDENS") == "1" {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantPNG, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (BATCHLET_UPDATE_GOLDENS=1 writes it)", path, err)
	}
	diff, total, err := pixelDiff(wantPNG, got)
	if err != nil || diff*100 > total {
		actual := writeArtifact(t, name+".png", got)
		t.Errorf("screenshot %s differs from %s: %d of %d pixels (%v); actual in %s", name, path, diff, total, err, actual)
	}
}

func pixelDiff(a, b []byte) (diff, total int, err error) {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return 0, 0, fmt.Errorf("golden: %w", err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, 0, fmt.Errorf("screenshot: %w", err)
	}
	if ia.Bounds().Size() != ib.Bounds().Size() {
		return 0, 0, fmt.Errorf("size %v, want %v", ib.Bounds().Size(), ia.Bounds().Size())
	}
	size := ia.Bounds().Size()
	for y := range size.Y {
		for x := range size.X {
			if !similar(ia, ib, image.Pt(x, y)) {
				diff++
			}
		}
	}
	return diff, size.X * size.Y, nil
}

func similar(a, b image.Image, p image.Point) bool {
	r1, g1, b1, _ := a.At(a.Bounds().Min.X+p.X, a.Bounds().Min.Y+p.Y).RGBA()
	r2, g2, b2, _ := b.At(b.Bounds().Min.X+p.X, b.Bounds().Min.Y+p.Y).RGBA()
	const tolerance = 48 << 8
	d := func(x, y uint32) bool { return x > y+tolerance || y > x+tolerance }
	return !d(r1, r2) && !d(g1, g2) && !d(b1, b2)
}

// writeArtifact keeps a screenshot for a look after the test (in
// BATCHLET_ARTIFACTS, else the test's temp dir) and returns its path.
func writeArtifact(t *testing.T, name string, b []byte) string {
	t.Helper()
	dir := os.Getenv("BATCHLET_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Errorf("write %s: %v", path, err)
	}
	t.Logf("screenshot %s", path)
	return path
}

// gatedJob's indexes print a line, then wait until their pod has
// /tmp/done.
const gatedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: gated
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo waiting $JOB_COMPLETION_INDEX; until [ -e /tmp/done ]; do sleep 0.2; done; echo released $JOB_COMPLETION_INDEX"]
`

// TestDashboardLive follows a running Job: the grid and a followed log
// change as its pods do, with no reload.
func TestDashboardLive(t *testing.T) {
	chrome := chromiumPath(t)
	s := startServer(t)
	login := s.loginURL(t)
	s.applyYAML(gatedJob)
	run := browser(t, chrome)
	run("open the running Job's page",
		chromedp.Navigate(login+"#/job/default/gated"), // the fragment survives the login's redirect
		chromedp.Poll(`document.getElementById("grid")?.dataset.cells === "rrr"`, nil, chromedp.WithPollingTimeout(2*time.Minute)))

	// Follow index 1's log, then release its pod.
	run("follow index 1's log",
		chromedp.Click(`#timeline tr[data-index="1"] button`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("log").textContent.includes("waiting 1")`, nil, chromedp.WithPollingTimeout(time.Minute)))
	pod := strings.TrimPrefix(strings.TrimSpace(s.kubectl("get", "pods", "-l", "batch.kubernetes.io/job-completion-index=1,batch.kubernetes.io/job-name=gated", "-o", "name")), "pod/")
	s.openGate(pod)
	var cells, log string
	run("see index 1 succeed",
		chromedp.Poll(`document.getElementById("grid").dataset.cells === "rsr"`, nil, chromedp.WithPollingTimeout(2*time.Minute)),
		chromedp.Poll(`document.getElementById("log").textContent.includes("released 1")`, nil, chromedp.WithPollingTimeout(time.Minute)),
		chromedp.AttributeValue("#grid", "data-cells", &cells, nil, chromedp.ByQuery),
		chromedp.Text("#log", &log, chromedp.ByQuery))
	if log != "waiting 1\nreleased 1\n" && log != "waiting 1\nreleased 1" {
		t.Errorf("followed log %q, want index 1's two lines", log)
	}
	var legend string
	run("read the legend", chromedp.Text("#legend", &legend, chromedp.ByQuery))
	if want := "pending 0 running 2 succeeded 1 failed 0"; strings.Join(strings.Fields(legend), " ") != want {
		t.Errorf("legend %q, want %q", legend, want)
	}
}
