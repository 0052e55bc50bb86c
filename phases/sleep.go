package phases

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends (then its error): the waits of the
// phases and of the adapters that poll or back off.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
