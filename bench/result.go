package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Metric is one measured figure of a scenario.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is "pods/s", "s", "ms", "MB", "x" (a ratio) or "" (a count).
	Unit string `json:"unit"`
}

// Result is what one scenario measured.
type Result struct {
	Scenario string `json:"scenario"`
	// Params are the sizes the scenario ran with.
	Params map[string]int `json:"params"`
	// Metrics in display order.
	Metrics []Metric `json:"metrics"`
	// Baseline names what the ratio compares with; Ratio is the headline
	// figure divided by (or, for latencies, compared with) the baseline.
	Baseline string  `json:"baseline,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	// Target is the goal in words and Met whether this run reached it.
	Target string `json:"target,omitempty"`
	Met    bool   `json:"met"`
	// Checks are the correctness facts verified (counts, completedIndexes).
	Checks []string `json:"checks,omitempty"`
	// Notes explain anything unusual (a profile written, a skipped part).
	Notes []string `json:"notes,omitempty"`
}

func (r *Result) add(name string, v float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: v, Unit: unit})
}

func (r *Result) addDuration(name string, d time.Duration) {
	r.add(name, float64(d)/float64(time.Millisecond), "ms")
}

// Metric returns the value of the named metric and whether it exists.
func (r *Result) Metric(name string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// Report is a whole run: the machine and every scenario's result.
type Report struct {
	Machine Machine  `json:"machine"`
	Results []Result `json:"results"`
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// WriteTable writes the report as an aligned table, one block per
// scenario, followed by each scenario's target, checks and notes.
func WriteTable(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "machine: %s\n\n", rep.Machine)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMETRIC\tVALUE")
	for _, r := range rep.Results {
		name := r.Scenario
		for _, m := range r.Metrics {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, m.Name, formatValue(m))
			name = ""
		}
		if r.Baseline != "" {
			fmt.Fprintf(tw, "%s\tratio to baseline\t%sx\n", name, formatNum(r.Ratio))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		fmt.Fprintf(w, "\n%s:\n", r.Scenario)
		if r.Baseline != "" {
			fmt.Fprintf(w, "  baseline: %s\n", r.Baseline)
		}
		if r.Target != "" {
			fmt.Fprintf(w, "  target:   %s: %s\n", r.Target, verdict(r.Met))
		}
		if len(r.Checks) > 0 {
			fmt.Fprintf(w, "  checked:  %s\n", strings.Join(r.Checks, "; "))
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  note:     %s\n", n)
		}
	}
	return nil
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
}

func formatValue(m Metric) string {
	switch m.Unit {
	case "":
		return fmt.Sprintf("%.0f", m.Value)
	case "x":
		return formatNum(m.Value) + "x"
	default:
		return formatNum(m.Value) + " " + m.Unit
	}
}

// formatNum prints three significant digits without exponents.
func formatNum(v float64) string {
	switch a := max(v, -v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
