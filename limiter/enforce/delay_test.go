package enforce_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// countingStore counts the decisions asked of it.
type countingStore struct {
	limiter.Store
	n atomic.Int64
}

func (c *countingStore) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	c.n.Add(1)
	return c.Store.Decide(ctx, req)
}

func delayPolicy(limit int64, maxWait time.Duration) enforce.Policy {
	return enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: limit, Period: time.Second, Burst: 1,
			Mode: enforce.ModeDelay, MaxWait: maxWait},
	}}
}

// checkAll runs n requests from one IP at once and returns how many were
// admitted.
func checkAll(e *enforce.Enforcer, n int) int {
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = "192.0.2.1:1"
			if e.Check(context.Background(), req).Allowed {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return int(ok.Load())
}

// TestDelayModeWaitersTakeTurns: 200 requests waiting on one key cost
// O(N) store calls (they take turns; they do not all wake and ask again
// after each admission), and all get through.
func TestDelayModeWaitersTakeTurns(t *testing.T) {
	const n = 200
	store := &countingStore{Store: limiter.NewMemory()}
	e, err := enforce.New(store, delayPolicy(2000, time.Minute), enforce.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if ok := checkAll(e, n); ok != n {
		t.Fatalf("%d of %d admitted, want all (each waits at most 0.1 s of a 1 min max_wait)", ok, n)
	}
	if calls := store.n.Load(); calls > 4*n {
		t.Fatalf("%d store calls for %d waiters on one key, want at most %d (O(N))", calls, n, 4*n)
	}
}

// TestDelayModeQueueBounded: beyond MaxWaiting waiting requests, a delay
// rule refuses at once.
func TestDelayModeQueueBounded(t *testing.T) {
	gate := make(chan struct{})
	clock := fakeclock.New(t0) // the store's: no refill until a wait passes
	sleep := func(ctx context.Context, d time.Duration) error {
		select {
		case <-gate:
			clock.Set(clock.Now().Add(d)) // only the head of the line sleeps
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e, err := enforce.New(limiter.NewMemory(limiter.WithClock(clock.Now)), delayPolicy(1000, time.Minute),
		enforce.Settings{MaxWaiting: 10, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan bool, 30)
	for range 30 {
		go func() {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = "192.0.2.1:1"
			results <- e.Check(context.Background(), req).Allowed
		}()
	}
	// The burst of 1 passes, 10 wait, 19 are refused at once: 20 answers
	// come before the gate opens.
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	defer open()
	refused := 0
	for i := range 20 {
		select {
		case ok := <-results:
			if !ok {
				refused++
			}
		case <-time.After(10 * time.Second): // a guard against a hang, not a timing
			t.Fatalf("%d answers before the gate opened, want 20: more than MaxWaiting wait", i)
		}
	}
	if refused != 19 {
		t.Fatalf("%d refused at once, want 19 (30 − 1 burst − 10 waiting)", refused)
	}
	open()
	for range 10 {
		if !<-results {
			t.Fatal("a waiting request was refused after the gate opened")
		}
	}
}
