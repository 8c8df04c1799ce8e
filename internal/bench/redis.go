package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
)

// RedisBytesPerKey makes one decision on each of n fresh keys, with a rule
// whose state lives an hour (so none expires while counting), and returns
// the growth of INFO memory used_memory per key. The keys are unlinked
// before and after.
func RedisBytesPerKey(c *redis.Client, s limiter.Store, alg limiter.Algorithm, n, conc int) (float64, error) {
	ctx := context.Background()
	if err := unlinkKeys(ctx, c); err != nil {
		return 0, err
	}
	before, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	rule := limiter.Rule{Name: "mem", Algorithm: alg, Limit: 1, Period: time.Hour, Burst: 1}
	var wg sync.WaitGroup
	var failed atomic.Value
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += conc {
				if _, err := s.Decide(ctx, limiter.Request{Key: "mem:" + strconv.Itoa(i), Rule: rule}); err != nil {
					failed.Store(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, fmt.Errorf("bench: memory: %w", err)
	}
	after, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), unlinkKeys(ctx, c)
}

// usedMemory is INFO memory's used_memory.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	f, err := info(ctx, c, "memory")
	if err != nil {
		return 0, err
	}
	v, ok := f["used_memory"]
	if !ok {
		return 0, errors.New("bench: INFO memory has no used_memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// RedisCPUSeconds is the user and system CPU of the Redis server of c so
// far (INFO cpu), or 0 without Redis or when it cannot tell.
func RedisCPUSeconds(c *redis.Client) float64 {
	if c == nil {
		return 0
	}
	f, err := info(context.Background(), c, "cpu")
	if err != nil {
		return 0
	}
	sys, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
	user, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
	return sys + user
}

// RedisScriptCalls is INFO commandstats' EVALSHA and EVAL calls on c's
// server (0 when c is nil or INFO fails): a batch script is one call
// however many decisions it holds.
func RedisScriptCalls(c *redis.Client) float64 {
	if c == nil {
		return 0
	}
	f, err := info(context.Background(), c, "commandstats")
	if err != nil {
		return 0
	}
	n := 0.0
	for _, k := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		for _, kv := range strings.Split(f[k], ",") { // calls=N,usec=M,…
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				x, _ := strconv.ParseFloat(v, 64)
				n += x
			}
		}
	}
	return n
}

// info is the fields of an INFO section of c's server (go-redis InfoMap).
func info(ctx context.Context, c *redis.Client, section string) (map[string]string, error) {
	m, err := c.InfoMap(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("bench: INFO %s: %w", section, err)
	}
	for _, fields := range m {
		return fields, nil // the one section asked for
	}
	return map[string]string{}, nil
}

// unlinkKeys removes every key under Prefix.
func unlinkKeys(ctx context.Context, c *redis.Client) error {
	iter := c.Scan(ctx, 0, Prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return fmt.Errorf("bench: UNLINK: %w", err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return fmt.Errorf("bench: UNLINK: %w", err)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("bench: SCAN: %w", err)
	}
	return nil
}
