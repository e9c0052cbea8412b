package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const coldManifest = `apiVersion: batch/v1
kind: Job
metadata:
  name: cold
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: "true"
        image: busybox
        command: ["true"]
`

// runCold times `batchlet run` of a one-pod Job as a whole process:
// start-up, an embedded control plane, the pod, the summary, tear-down.
func runCold(ctx context.Context, r *runner) (Result, error) {
	iterations := r.cfg.Iterations
	if iterations == 0 {
		iterations = 10
	}
	res := Result{Params: map[string]int{"runs": iterations}}
	dir, cleanup, err := r.tempDir("cold")
	if err != nil {
		return res, err
	}
	defer cleanup()
	manifest := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(manifest, []byte(coldManifest), 0o644); err != nil {
		return res, fmt.Errorf("write manifest: %w", err)
	}
	argv, err := r.command()
	if err != nil {
		return res, err
	}
	env := append(os.Environ(), r.cfg.Env...)
	env = append(env, "TMPDIR="+dir)
	base, _, err := execMedian(ctx, []string{"true"}, env, iterations)
	if err != nil {
		return res, err
	}
	u0 := takeUsage()
	med, worst, err := execMedian(ctx, append(argv, "run", "--quiet", manifest), env, iterations)
	if err != nil {
		return res, err
	}
	u1 := takeUsage()
	res.addDuration("wall median", med)
	res.addDuration("wall max", worst)
	res.addDuration("exec true median", base)
	res.add("CPU per run (process + pods)", (u1.childCPU-u0.childCPU).Seconds()/float64(iterations), "s")
	res.Baseline = "exec of true"
	res.Ratio = float64(med) / float64(max(base, time.Microsecond))
	res.Target, res.Met = "median < 100 ms", med < 100*time.Millisecond
	res.Checks = append(res.Checks, fmt.Sprintf("%d runs exited 0", iterations))
	return res, nil
}

// command is the batchlet command line prefix to execute.
func (r *runner) command() ([]string, error) {
	if len(r.cfg.Command) > 0 {
		return r.cfg.Command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this executable: %w", err)
	}
	return []string{exe}, nil
}
