package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// peerKubeVersion is the Kubernetes release hack/realcluster/build.sh
// builds by default.
const peerKubeVersion = "v1.34.4"

// peerBinaries are the upstream programs the peer scenario runs.
var peerBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// The upstream control plane's tuning: client QPS/burst raised far above
// the defaults (kube-controller-manager 20/30, kube-scheduler 50/100,
// kubelet 50/100), which throttle before anything else on one machine, and
// more Job and GC workers than the defaults (5 and 20). Every component
// authenticates as system:masters, which API Priority and Fairness exempts.
const (
	peerQPS             = 1000
	peerBurst           = 2000
	peerConcurrentJobs  = 50
	peerConcurrentGC    = 50
	peerNodeName        = "peer-node"
	peerDefaultComplete = 2_000
	peerDefaultParallel = 100
)

// peerBinDir is where the upstream binaries are looked for: the flag, then
// $BATCHLET_REALCLUSTER_BIN, then build.sh's default cache.
func peerBinDir(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if d := getenv("BATCHLET_REALCLUSTER_BIN"); d != "" {
		return d
	}
	if d := getenv("BATCHLET_REALCLUSTER_CACHE"); d != "" {
		return filepath.Join(d, "bin")
	}
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(getenv("HOME"), ".cache")
	}
	return filepath.Join(cache, "batchlet", "realcluster-"+peerKubeVersion, "bin")
}

// missingBinaries lists the peer binaries dir lacks.
func missingBinaries(dir string) []string {
	var missing []string
	for _, b := range peerBinaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	return missing
}

// runPeer runs one Indexed Job on batchlet server (sim runtime) and the
// same Job on an upstream control plane whose node is `batchlet agent
// --runtime sim`, and reports the ratio of their pods/s.
func runPeer(ctx context.Context, r *runner) (Result, error) {
	jr := jobRun{name: "peer", runtime: "sim", completions: peerDefaultComplete, parallelism: peerDefaultParallel}
	r.override(&jr)
	res := Result{Params: map[string]int{"completions": jr.completions, "parallelism": jr.parallelism}}
	bin := peerBinDir(r.cfg.PeerBin, os.Getenv)
	if missing := missingBinaries(bin); len(missing) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("skipped: %s missing in %s (build them with hack/realcluster/build.sh --peer, or point --peer-bin at them)",
			strings.Join(missing, ", "), bin))
		return res, nil
	}
	own, err := r.runJob(ctx, jr)
	if err != nil {
		return res, fmt.Errorf("batchlet server: %w", err)
	}
	ownPPS, _ := own.Metric("pods/s")
	ownPeak, _ := own.Metric(metricPeakRSS)
	ownAnon, _ := own.Metric(metricPeakAnon)
	ownCPU, _ := own.Metric("CPU (server, run)")
	r.progress("peer: batchlet server %.0f pods/s; starting the upstream control plane", ownPPS)
	up, err := r.runUpstream(ctx, bin, jr)
	if err != nil {
		return res, fmt.Errorf("upstream control plane: %w", err)
	}
	res.add("batchlet server: pods/s", ownPPS, "pods/s")
	res.add("upstream: pods/s", up.podsPerSecond, "pods/s")
	res.add("batchlet server: "+metricPeakRSS, ownPeak, "MB")
	res.add("batchlet server: "+metricPeakAnon, ownAnon, "MB")
	res.add("upstream control plane: peak RSS (sum)", up.controlPlanePeakMB, "MB")
	res.add("upstream agent: peak RSS", up.agentPeakMB, "MB")
	res.add("batchlet server: CPU (run)", ownCPU, "s")
	res.add("upstream control plane: CPU (run)", up.controlPlaneCPU.Seconds(), "s")
	res.add("upstream agent: CPU (run)", up.agentCPU.Seconds(), "s")
	if ownCPU > 0 {
		// Both sides include their node agent's CPU: batchlet's runs in
		// the server process.
		res.add("CPU ratio (upstream with agent / batchlet server)", (up.controlPlaneCPU+up.agentCPU).Seconds()/ownCPU, "x")
	}
	res.Baseline = fmt.Sprintf("etcd + kube-apiserver + kube-controller-manager (job, podgc, garbagecollector, nodelifecycle) + kube-scheduler %s, node: batchlet agent --runtime sim", peerKubeVersion)
	if up.podsPerSecond > 0 {
		res.Ratio = ownPPS / up.podsPerSecond
	}
	res.Target, res.Met = ">= 40x upstream", res.Ratio >= 40
	res.Checks = append(res.Checks, own.Checks...)
	res.Checks = append(res.Checks, "upstream: "+strings.Join(up.checks, ", "))
	res.Notes = append(res.Notes, fmt.Sprintf("upstream tuning: client QPS/burst %d/%d (controller-manager, scheduler, agent), --concurrent-job-syncs=%d, --concurrent-gc-syncs=%d, all as system:masters (exempt from API Priority and Fairness)",
		peerQPS, peerBurst, peerConcurrentJobs, peerConcurrentGC))
	return res, nil
}

// upstreamRun is what the upstream half of the peer scenario measured.
type upstreamRun struct {
	podsPerSecond      float64
	controlPlanePeakMB float64
	agentPeakMB        float64
	controlPlaneCPU    time.Duration
	agentCPU           time.Duration
	checks             []string
}

// runUpstream starts the upstream control plane and the agent, runs jr and
// stops them.
func (r *runner) runUpstream(ctx context.Context, bin string, jr jobRun) (upstreamRun, error) {
	var out upstreamRun
	dir, cleanup, err := r.tempDir("peer-upstream")
	if err != nil {
		return out, err
	}
	defer cleanup()
	batchlet, err := r.command()
	if err != nil {
		return out, err
	}
	cluster := &daemons{dir: dir}
	defer cluster.stopAll()
	kubeconfig, cfg, err := cluster.startControlPlane(ctx, bin, r.cfg.TerminatedPodGCThreshold)
	if err != nil {
		return out, err
	}
	// The agent's log/exec endpoints are not used here; it still needs a
	// CA to check the API server's client certificate against.
	clientCA := filepath.Join(dir, "kubelet-client-ca.crt")
	if err := writeCA(clientCA); err != nil {
		return out, err
	}
	agentArgs := append(append([]string{}, batchlet[1:]...), "agent", "--kubeconfig", kubeconfig, "--runtime", "sim",
		"--client-ca-file", clientCA,
		"--node-name", peerNodeName, "--root-dir", filepath.Join(dir, "agent"), "--no-results",
		"--max-pods", strconv.Itoa(max(jr.parallelism, 110)),
		"--kube-api-qps", strconv.Itoa(peerQPS), "--kube-api-burst", strconv.Itoa(peerBurst))
	agent, err := cluster.start("agent", batchlet[0], r.cfg.Env, agentArgs...)
	if err != nil {
		return out, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return out, fmt.Errorf("client: %w", err)
	}
	if err := waitNodeReady(ctx, kube); err != nil {
		return out, cluster.withLogs(err)
	}
	r.progress("peer: upstream control plane up; running %d x %d", jr.completions, jr.parallelism)

	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	obs := newJobObserver(jr.completions, false)
	if err := obs.start(wctx, kube, nil, "default", jr.name); err != nil {
		return out, err
	}
	cpu0 := cluster.cpu()
	start := time.Now()
	if _, err := kube.BatchV1().Jobs("default").Create(ctx, indexedJob(jr), metav1.CreateOptions{}); err != nil {
		return out, fmt.Errorf("create job: %w", err)
	}
	stopReports := r.every(time.Minute, func() { r.progress("peer (upstream): %s", obs.progress()) })
	job, doneAt, err := obs.wait(ctx)
	stopReports()
	stopWatch()
	obs.stopped()
	if err != nil {
		return out, cluster.withLogs(err)
	}
	cpu1 := cluster.cpu()
	var check Result
	if err := checkJob(job, jr.completions, &check); err != nil {
		return out, err
	}
	out.checks = check.Checks
	out.podsPerSecond = float64(jr.completions) / doneAt.Sub(start).Seconds()
	for _, d := range cluster.procs {
		peak := d.peakMB()
		cpu := cpu1[d.name] - cpu0[d.name]
		if d == agent {
			out.agentPeakMB, out.agentCPU = peak, cpu
			continue
		}
		out.controlPlanePeakMB += peak
		out.controlPlaneCPU += cpu
	}
	return out, nil
}

// daemons are the processes of the upstream cluster, stopped in reverse.
type daemons struct {
	dir   string
	procs []*daemon
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// start runs path with args, its output in <dir>/<name>.log.
func (ds *daemons) start(name, path string, env []string, args ...string) (*daemon, error) {
	logPath := filepath.Join(ds.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	defer f.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	ds.procs = append(ds.procs, d)
	return d, nil
}

// stopAll sends SIGTERM to each process, newest first, and SIGKILL to its
// process group after 15 s.
func (ds *daemons) stopAll() {
	for i := len(ds.procs) - 1; i >= 0; i-- {
		d := ds.procs[i]
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	}
}

// withLogs adds the tail of each process's log to err.
func (ds *daemons) withLogs(err error) error {
	var b strings.Builder
	for _, d := range ds.procs {
		data, _ := os.ReadFile(d.log)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "\n--- %s log (tail) ---\n%s", d.name, data)
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// cpu reads each running process's user+system CPU time.
func (ds *daemons) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, d := range ds.procs {
		out[d.name] = procCPU(d.cmd.Process.Pid)
	}
	return out
}

// peakMB is the process's peak resident set (VmHWM) while it runs.
func (d *daemon) peakMB() float64 {
	kb, _ := procField(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid), "VmHWM:")
	return float64(kb) / 1024
}

// procCPU is utime+stime of pid from /proc/<pid>/stat (USER_HZ = 100).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return statCPU(string(data))
}

// statCPU parses utime and stime (fields 14 and 15) of a /proc/<pid>/stat
// line; the command name (field 2) may hold spaces, so fields are counted
// after its closing parenthesis.
func statCPU(stat string) time.Duration {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler and returns an admin kubeconfig and client config.
func (ds *daemons) startControlPlane(ctx context.Context, bin string, podGCThreshold int) (string, *rest.Config, error) {
	ports, err := freePorts(3)
	if err != nil {
		return "", nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	if _, err := ds.start("etcd", filepath.Join(bin, "etcd"), nil, etcdArgs(filepath.Join(ds.dir, "etcd"), etcdPort, peerPort)...); err != nil {
		return "", nil, err
	}
	token, err := randomToken()
	if err != nil {
		return "", nil, err
	}
	saKey := filepath.Join(ds.dir, "sa.key")
	tokens := filepath.Join(ds.dir, "tokens.csv")
	if err := writeRSAKey(saKey); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(tokens, []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return "", nil, fmt.Errorf("write tokens: %w", err)
	}
	if _, err := ds.start("kube-apiserver", filepath.Join(bin, "kube-apiserver"), nil,
		apiserverArgs(ds.dir, etcdPort, apiPort, tokens, saKey)...); err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if err := waitReady(ctx, url+"/readyz", token); err != nil {
		return "", nil, ds.withLogs(err)
	}
	kubeconfig := filepath.Join(ds.dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(adminKubeconfig(url, token)), 0o600); err != nil {
		return "", nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	if _, err := ds.start("kube-controller-manager", filepath.Join(bin, "kube-controller-manager"), nil,
		controllerManagerArgs(kubeconfig, podGCThreshold)...); err != nil {
		return "", nil, err
	}
	schedConfig := filepath.Join(ds.dir, "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte(schedulerConfig(kubeconfig)), 0o600); err != nil {
		return "", nil, fmt.Errorf("write scheduler config: %w", err)
	}
	if _, err := ds.start("kube-scheduler", filepath.Join(bin, "kube-scheduler"), nil,
		"--config="+schedConfig, "--secure-port=0"); err != nil {
		return "", nil, err
	}
	cfg := &rest.Config{Host: url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: peerQPS, Burst: peerBurst}
	return kubeconfig, cfg, nil
}

func etcdArgs(dataDir string, clientPort, peerPort int) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return []string{"--name=default", "--data-dir=" + dataDir,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer}
}

func apiserverArgs(dir string, etcdPort, apiPort int, tokens, saKey string) []string {
	return []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir=" + filepath.Join(dir, "certs"), "--token-auth-file=" + tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey, "--service-cluster-ip-range=10.96.0.0/16",
		// No service account controller runs, so pods get no token volume,
		// as on batchlet server with the sim runtime.
		"--disable-admission-plugins=ServiceAccount",
		// A loopback address is no valid endpoint of the kubernetes
		// Service: without this the API server retries it every 10 s.
		"--endpoint-reconciler-type=none",
	}
}

func controllerManagerArgs(kubeconfig string, podGCThreshold int) []string {
	args := []string{"--kubeconfig=" + kubeconfig, "--controllers=job,podgc,garbagecollector,nodelifecycle",
		"--leader-elect=false", "--secure-port=0",
		fmt.Sprintf("--kube-api-qps=%d", peerQPS), fmt.Sprintf("--kube-api-burst=%d", peerBurst),
		fmt.Sprintf("--concurrent-job-syncs=%d", peerConcurrentJobs), fmt.Sprintf("--concurrent-gc-syncs=%d", peerConcurrentGC)}
	if podGCThreshold > 0 {
		args = append(args, fmt.Sprintf("--terminated-pod-gc-threshold=%d", podGCThreshold))
	}
	return args
}

func schedulerConfig(kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
`, kubeconfig, peerQPS, peerBurst)
}

func adminKubeconfig(server, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: peer
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: peer
  context: {cluster: peer, user: admin}
current-context: peer
`, server, token)
}

// waitReady polls url with the token until it answers 200.
func waitReady(ctx context.Context, url, token string) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", url, err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", url, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// freePorts reserves n distinct loopback ports (released before use, as
// any free-port helper).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeCA writes a self-signed CA certificate (its key is discarded).
func writeCA(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("client CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-kubelet-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("client CA: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write client CA: %w", err)
	}
	return nil
}

func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	return nil
}
