package runner

import (
	"fmt"
	"strings"
)

// progressLine renders e.g. "job/pi: 1 active, 0/1 succeeded, 0 failed".
func progressLine(items []ItemResult) string {
	parts := make([]string, 0, len(items))
	for _, it := range items {
		total := "?"
		if it.Counts.Completions >= 0 {
			total = fmt.Sprint(it.Counts.Completions)
		}
		unit := ""
		if it.Kind == JobSetGVK.Kind {
			unit = " jobs" // a JobSet's counters count child Jobs
		}
		s := fmt.Sprintf("%s/%s: %d active, %d/%s%s succeeded, %d failed", strings.ToLower(it.Kind), it.Name, it.Counts.Active, it.Counts.Succeeded, total, unit, it.Counts.Failed)
		if it.Restarts > 0 {
			s += fmt.Sprintf(", %d restarts", it.Restarts)
		}
		if it.Outcome != OutcomeRunning {
			s += " — " + outcomeWord(it)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
