// Package wait holds throttled's one sleep, one periodic loop and one
// Retry-After jitter, shared by the enforcer, the proxy, the coordination
// loops, the controller and the background checks of cmd/throttled.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends and then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Every calls f every d (the first time d from now) until ctx ends, then
// returns nil: a background check that runs for the life of ctx.
func Every(ctx context.Context, d time.Duration, f func(context.Context)) error {
	return Until(ctx, d, func(ctx context.Context) bool { f(ctx); return false })
}

// Until calls f every d (the first time d from now) until f reports done
// or ctx ends, then returns nil: a background retry.
func Until(ctx context.Context, d time.Duration, f func(context.Context) (done bool)) error {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if f(ctx) {
				return nil
			}
		}
	}
}

// Seconds is d in whole seconds, rounded up, never below 1: the value of a
// Retry-After header.
func Seconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// Jittered is Seconds(d) plus a uniform jitter of up to half of it (at
// least 1 s), drawn with randN (uniform in [0, n), e.g. math/rand/v2's
// Int64N), so that clients refused together do not return together.
func Jittered(d time.Duration, randN func(n int64) int64) int64 {
	s := Seconds(d)
	return s + randN(max(1, s/2)+1)
}
