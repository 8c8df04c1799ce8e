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
	var in bool
	if alg == limiter.SlidingWindowLog { // its state is its own keys
		var n int64
		n, err = r.c.Exists(ctx, r.Key(alg, req.Key)).Result()
		in = n > 0
	} else {
		in, err = r.c.HExists(ctx, r.Bucket(alg, req.Key), req.Key).Result()
	}
	if err != nil {
		return d, false, fmt.Errorf("redisstore: peek: %w", err)
	}
	if in {
		return d, false, nil
	}
	d, err = limiter.NewMemory().Decide(ctx, req) // a fresh bucket, by the same semantics
	return d, err == nil, err
}
