// Package periodic runs a controller's pass over and over until its context
// ends: the loop shared by the controllers that work in whole passes.
package periodic

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Run calls pass at once, then again period after each pass returned, or
// sooner when wake delivers (a nil wake never does). A failed pass goes to
// failed and the loop goes on. Run returns when ctx ends.
func Run(ctx context.Context, clk clock.Clock, period time.Duration, wake <-chan struct{},
	pass func(context.Context) error, failed func(error)) {
	for {
		if err := pass(ctx); err != nil {
			failed(err)
		}
		t := clk.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-t.C():
		}
		t.Stop()
	}
}
