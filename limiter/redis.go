package limiter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the shared store: one Lua script call per decision, so every
// instance that uses the same Redis (or Redis Cluster) shares one truth.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	now    func() time.Time // nil: Redis TIME
}

// NewRedis returns a store on c, a single Redis or a cluster client.
// Options: WithPrefix, WithClock (tests only, see WithClock).
func NewRedis(c redis.UniversalClient, opts ...Option) *Redis {
	o := newOptions(opts)
	return &Redis{c: c, prefix: o.prefix, now: o.now}
}

// Key is the Redis key that holds the state of key under algorithm alg.
func (r *Redis) Key(alg Algorithm, key string) string {
	return r.prefix + algCodes[alg] + ":{" + key + "}"
}

// Decide runs the rule's script for the request's key.
func (r *Redis) Decide(ctx context.Context, req Request) (Decision, error) {
	if err := req.normalize(); err != nil {
		return Decision{}, err
	}
	now := ""
	if r.now != nil {
		now = strconv.FormatInt(r.now().UnixMicro(), 10)
	}
	alg := req.Rule.Algorithm
	res, err := scripts[alg].Run(ctx, r.c, []string{r.Key(alg, req.Key)},
		now, req.Rule.Limit, int64(req.Rule.Period/time.Microsecond),
		req.Rule.capacity(), req.Cost, req.Multiplier, refundArg[b2i(req.Refund)]).Result()
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: redis %s: %w", alg, err)
	}
	v, err := decodeReply(res)
	if err != nil {
		return Decision{}, err
	}
	return decisionOf(&req, v), nil
}

var refundArg = [2]string{"", "1"}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decodeReply checks and reads a script reply {reason, remaining, reset_us,
// retry_us}. It is the one place that reads replies.
func decodeReply(res any) (verdict, error) {
	arr, ok := res.([]any)
	if !ok || len(arr) != 4 {
		return verdict{}, fmt.Errorf("%w: want an array of 4 integers, got %T %v", ErrBadReply, res, res)
	}
	var n [4]int64
	for i, x := range arr {
		if n[i], ok = x.(int64); !ok {
			return verdict{}, fmt.Errorf("%w: element %d is %T, want integer", ErrBadReply, i, x)
		}
	}
	if n[0] < 0 || n[0] >= int64(numReasons) || n[1] < 0 || n[2] < 0 || n[3] < 0 {
		return verdict{}, fmt.Errorf("%w: values out of range: %v", ErrBadReply, n)
	}
	return verdict{reason: Reason(n[0]), remaining: float64(n[1]),
		reset: float64(n[2]), retry: float64(n[3])}, nil
}
