package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// ErrNotReady is wrapped by the errors of Ready.
var ErrNotReady = errors.New("redisstore: not ready")

// readyKey is the key of the readiness decision; with the default prefix
// its state is the field __ready__ of "throttled:tb{<tag>}". The huge limit
// means it is never refused by its own counting.
const readyKey = "__ready__"

var readyRule = limiter.Rule{Name: "ready", Limit: 1e12, Period: time.Second}

// Ready makes a real token bucket decision on a reserved key, so it checks
// what decisions need (a reachable, writable Redis that runs scripts), not
// just PING. It returns nil when the decision admits, else an error wrapping
// ErrNotReady. For a Redis that stalls, ctx must carry a deadline and the
// client must honour it (go-redis: ContextTimeoutEnabled).
func (r *Store) Ready(ctx context.Context) error {
	d, err := r.Decide(ctx, limiter.Request{Key: readyKey, Rule: readyRule})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if !d.Allowed {
		return fmt.Errorf("%w: probe decision on %q was %s", ErrNotReady, readyKey, d.Reason)
	}
	return nil
}
