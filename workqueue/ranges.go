package workqueue

import (
	"fmt"

	"github.com/batchlet/batchlet/indexset"
)

// parseCompleted reads the queue's completed items (indexset's notation,
// as a Job's completedIndexes) for n items.
func parseCompleted(s string, n int) ([]bool, error) {
	set, err := indexset.Parse(s, n)
	if err != nil {
		return nil, fmt.Errorf("workqueue: completed %q: %w", s, err)
	}
	return set, nil
}
