package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// TestCallTimeoutKeepsConnections: with Settings.CallTimeout, callers whose
// deadlines pass while Redis is paused stop waiting at their deadlines
// (context.DeadlineExceeded), and their batches run on until Redis answers,
// so the connections stay in the pool: Redis accepts no new connection over
// three slow rounds. Without it each batch is cut at its callers' deadline
// and go-redis closes its connection.
func TestCallTimeoutKeepsConnections(t *testing.T) {
	const workers, rounds = 8, 3
	r := testenv.StartRedis(t)
	admin := r.Client()
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, PoolSize: 4})
	t.Cleanup(func() { c.Close() })
	s, err := NewWithSettings(c, Settings{CallTimeout: 5 * time.Second}, limiter.WithPrefix("ct:"))
	if err != nil {
		t.Fatal(err)
	}
	decide := func(wait time.Duration) (late int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_, err := s.Decide(ctx, limiter.Request{Key: fmt.Sprint("k", w), Rule: batchRule})
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					mu.Lock()
					late++
					mu.Unlock()
				case err != nil:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		return late
	}
	if late := decide(10 * time.Second); late != 0 { // warm the pool
		t.Fatalf("%d decisions late on a healthy Redis", late)
	}
	before := testenv.InfoInt(t, admin, "stats", "total_connections_received")
	for round := range rounds {
		if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "400", "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		if late := decide(50 * time.Millisecond); late != workers {
			t.Fatalf("round %d: %d of %d decisions ended at their deadline while Redis was paused", round, late, workers)
		}
		if late := decide(10 * time.Second); late != 0 { // after the pause
			t.Fatalf("round %d: %d decisions late after the pause", round, late)
		}
	}
	if n := testenv.InfoInt(t, admin, "stats", "total_connections_received") - before; n != 0 {
		t.Errorf("Redis accepted %d new connections over %d slow rounds, want 0 (the batches ran on)", n, rounds)
	}
}

// TestCallTimeoutNegative: a negative CallTimeout is refused, named.
func TestCallTimeoutNegative(t *testing.T) {
	_, err := NewWithSettings(redis.NewClient(&redis.Options{}), Settings{CallTimeout: -time.Second})
	if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), "CallTimeout") {
		t.Fatalf("err = %v, want ErrBadSettings naming CallTimeout", err)
	}
}
