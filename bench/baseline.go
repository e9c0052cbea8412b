package bench

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// xargsBaseline measures `seq n | xargs -P p -n 1 true`: how fast this
// machine starts and reaps n trivial processes p at a time, with no control
// plane at all. It returns processes per second and caches by (n, p).
func (r *runner) xargsBaseline(ctx context.Context, n, p int) (float64, error) {
	if v, ok := r.baselines[[2]int{n, p}]; ok {
		return v, nil
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf("seq %d | xargs -P %d -n 1 true", n, p))
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		// %v: a wrapped *exec.ExitError would become the exit code of batchlet.
		return 0, fmt.Errorf("baseline xargs: %v: %s", err, out)
	}
	rate := float64(n) / time.Since(start).Seconds()
	r.baselines[[2]int{n, p}] = rate
	r.progress("baseline: seq %d | xargs -P %d -n 1 true: %.0f/s", n, p, rate)
	return rate, nil
}

// execMedian runs argv iterations times and returns the median and the
// slowest wall time. Every run must exit 0.
func execMedian(ctx context.Context, argv, env []string, iterations int) (median, worst time.Duration, err error) {
	var ds []time.Duration
	for range iterations {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			return 0, 0, fmt.Errorf("%v: %v: %s", argv, err, out)
		}
		ds = append(ds, d)
	}
	return percentile(ds, 50), percentile(ds, 100), nil
}
