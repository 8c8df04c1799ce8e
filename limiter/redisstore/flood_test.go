package redisstore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// floodKeys is how many random keys TestKeyFlood sends: THROTTLED_FLOOD_KEYS
// (`make flood`: 1,000,000), else 20,000.
func floodKeys(t *testing.T) int {
	v := os.Getenv("THROTTLED_FLOOD_KEYS")
	if v == "" {
		return 20_000
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("THROTTLED_FLOOD_KEYS=%q: %v", v, err)
	}
	return n
}

func usedMemory(t *testing.T, c *redis.Client) int64 {
	return testenv.InfoInt(t, c, "memory", "used_memory")
}

// liveKeys counts the client keys Redis holds state for: the fields of the
// buckets (hashes), and the other keys.
func liveKeys(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		if c.Type(ctx, iter.Val()).Val() == "hash" {
			n += c.HLen(ctx, iter.Val()).Val()
		} else {
			n++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestKeyFlood: a flood of random client keys leaves a TTL on every key
// (they all expire, and memory returns), costs a steady number of bytes per
// live key, and a legitimate client's bucket still limits exactly.
func TestKeyFlood(t *testing.T) {
	r := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), PoolSize: 32})
	t.Cleanup(func() { _ = c.Close() })
	s := redisstore.New(c, limiter.WithPrefix("flood:"))
	ctx := context.Background()
	base := usedMemory(t, c)
	n := floodKeys(t)
	flood := limiter.Rule{Name: "flood", Limit: 1, Period: 5 * time.Second} // TTL: 5 s
	legit := limiter.Rule{Name: "legit", Limit: 5, Period: time.Hour}       // no refill during the test
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				key := strconv.FormatUint(rand.Uint64(), 36)
				if _, err := s.Decide(ctx, limiter.Request{Key: key, Rule: flood}); err != nil {
					errs.Add(1)
				}
			}
		})
	}
	admitted := 0
	for range 20 {
		d, err := s.Decide(ctx, limiter.Request{Key: "legit", Rule: legit})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if errs.Load() > 0 || admitted != 5 {
		t.Fatalf("during the flood: %d errors, legit client admitted %d of 20 (want 0 errors, 5)", errs.Load(), admitted)
	}
	live := liveKeys(t, c)
	perKey := float64(usedMemory(t, c)-base) / float64(live)
	t.Logf("%d keys in %v (%.0f/s): %d live at the end (%d Redis keys), %.0f bytes per live key", n, elapsed,
		float64(n)/elapsed.Seconds(), live, c.DBSize(ctx).Val(), perKey)
	if perKey > 256 {
		t.Errorf("%.0f bytes per live key, want at most 256", perKey)
	}
	// Every key has a TTL: none is left once they expired (the legit one
	// lives an hour). Redis expires keys by sampling: allow it time.
	deadline := time.Now().Add(30 * time.Second)
	for c.DBSize(ctx).Val() > 1 {
		if time.Now().After(deadline) {
			var noTTL []string
			for _, k := range c.Keys(ctx, "*").Val() {
				if c.PTTL(ctx, k).Val() < 0 {
					noTTL = append(noTTL, k)
				}
			}
			t.Fatalf("%d keys left 30s after a flood of 5s TTLs; without a TTL: %v", c.DBSize(ctx).Val(), noTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d, _ := s.Decide(ctx, limiter.Request{Key: "legit", Rule: legit}); d.Allowed {
		t.Error("the legit client's bucket was lost in the flood")
	}
}
