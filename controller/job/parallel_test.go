package job

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

func TestInParallelErrorsByIndex(t *testing.T) {
	var calls atomic.Int32
	errs := inParallel(4, func(i int) error {
		calls.Add(1)
		if i%2 == 1 {
			return fmt.Errorf("item %d", i)
		}
		return nil
	})
	if calls.Load() != 4 || len(errs) != 4 {
		t.Fatalf("calls = %d, errs = %d, want 4 and 4", calls.Load(), len(errs))
	}
	for i, err := range errs {
		if want := i%2 == 1; (err != nil) != want || (want && err.Error() != fmt.Sprintf("item %d", i)) {
			t.Errorf("errs[%d] = %v", i, err)
		}
	}
	if err := errors.Join(inParallel(0, nil)...); err != nil {
		t.Errorf("no items: %v", err)
	}
}
