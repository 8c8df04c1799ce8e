package fallback_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// totalConnections is the connections Redis has accepted since it started.
func totalConnections(t *testing.T, c *redis.Client) int64 {
	return testenv.InfoInt(t, c, "stats", "total_connections_received")
}

// TestSlowRedisKeepsConnections: while Redis answers slower than the
// decision deadline (paused for 300 ms, three times), decisions fall back at
// their deadline, and the calls that missed it finish on their own and keep
// their pooled connections: Redis accepts (almost) no new connection, where
// cutting each late call would have cost one per decision.
func TestSlowRedisKeepsConnections(t *testing.T) {
	r := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 8})
	defer c.Close()
	f, err := fallback.New(redisstore.New(c, limiter.WithPrefix("slow:")),
		fallback.Settings{Deadline: 50 * time.Millisecond, CallTimeout: 2 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slowRounds(t, r, f)
}

// TestSlowRedisStoreTimeoutKeepsConnections is TestSlowRedisKeepsConnections
// with the store's own CallTimeout (redisstore.Settings) instead of the
// fallback's, as throttled serve wires them: the batch runs on past the
// decision's deadline, and no goroutine is started per decision.
func TestSlowRedisStoreTimeoutKeepsConnections(t *testing.T) {
	r := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 8})
	defer c.Close()
	shared, err := redisstore.NewWithSettings(c, redisstore.Settings{CallTimeout: 2 * time.Second},
		limiter.WithPrefix("slow:"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := fallback.New(shared, fallback.Settings{Deadline: 50 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slowRounds(t, r, f)
}

// slowRounds pauses r three times for 300 ms while 4 workers decide
// through f: every decision falls back during the pause, none after it,
// and Redis accepts at most a warm pool of new connections.
func slowRounds(t *testing.T, r *testenv.Redis, f *fallback.Store) {
	const workers, rounds = 4, 3
	admin := r.Client()
	rule := limiter.Rule{Name: "r", Limit: 1_000_000, Period: time.Second, Fallback: limiter.FallbackAllow}
	decide := func() (fell int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				d, err := f.Decide(context.Background(), limiter.Request{Key: "k" + strconv.Itoa(w), Rule: rule})
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if d.Fallback {
					fell++
				}
			})
		}
		wg.Wait()
		return fell
	}
	if fell := decide(); fell != 0 { // warm the pool
		t.Fatalf("%d decisions fell back on a healthy Redis", fell)
	}
	before := totalConnections(t, admin)
	for round := range rounds {
		if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "300", "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		if fell := decide(); fell != workers {
			t.Fatalf("round %d: %d of %d decisions fell back while Redis was paused", round, fell, workers)
		}
		deadline := time.Now().Add(10 * time.Second)
		for decide() != 0 { // until Redis answers in time again
			if time.Now().After(deadline) {
				t.Fatal("Redis did not answer in time 10s after its pause")
			}
		}
	}
	if n := totalConnections(t, admin) - before; n > workers {
		t.Fatalf("Redis accepted %d new connections over %d slow rounds of %d decisions, want at most %d (a warm pool)",
			n, rounds, workers, workers)
	}
}
