package redisstore

import (
	"context"
	"fmt"

	"github.com/throttledhq/throttled/limiter"
)

// peekAbsent answers a Peek (req normalized) at a key that Redis does not
// hold, as a fresh bucket, without running the script: the script writes
// the state it reads, and inspecting a key must not create it. ok is false
// when the key exists (the script then reads it).
func (r *Store) peekAbsent(ctx context.Context, req limiter.Request) (d limiter.Decision, ok bool, err error) {
	alg := req.Rule.Algorithm
	n := int64(0)
	if alg != limiter.SlidingWindowLog {
		var in bool
		if in, err = r.c.HExists(ctx, r.Bucket(alg, req.Key), req.Key).Result(); in {
			n = 1
		}
	}
	if n == 0 && err == nil { // the sliding log, or state an older version left
		n, err = r.c.Exists(ctx, r.Key(alg, req.Key)).Result()
	}
	if err != nil {
		return d, false, fmt.Errorf("redisstore: peek: %w", err)
	}
	if n > 0 {
		return d, false, nil
	}
	d, err = limiter.NewMemory().Decide(ctx, req) // a fresh bucket, by the same semantics
	return d, err == nil, err
}
