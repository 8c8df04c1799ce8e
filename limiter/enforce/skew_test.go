package enforce_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// skewRun has three enforcing instances on one Redis, whose local clocks
// are 30 s behind, exact and 30 s ahead, hammer one client key for window.
// It returns the admitted count and the window as Redis measured it.
func skewRun(t *testing.T, r *testenv.Redis, window time.Duration) (admitted int64, measured time.Duration) {
	t.Helper()
	policy := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 20, Period: time.Second, Burst: 5, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"header:X-API-Key"}}},
	}
	c := r.Client()
	start, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, skew := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		local := func() time.Time { return time.Now().Add(skew) }
		e, err := enforce.New(redisstore.New(c, limiter.WithPrefix("skew:")), policy,
			enforce.Settings{Identifier: apiKeyIdentifier{}, Now: local})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var n int64
			for end := time.Now().Add(window); time.Now().Before(end); {
				req := httptest.NewRequest("GET", "/", nil)
				req.Header.Set("X-API-Key", "skewed")
				if e.Check(context.Background(), req).Allowed {
					n++
				}
			}
			mu.Lock()
			admitted += n
			mu.Unlock()
		})
	}
	wg.Wait()
	end, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return admitted, end.Sub(start)
}

// TestClockSkewAcrossInstances: enforcing instances whose local clocks are
// skewed by ±30 s admit no more than burst + rate × window together,
// because the Redis store takes its time from Redis (TIME). The window is
// 2 s at a rule of 20/s (a minute at 20/min scales the same way); the
// instances' Now (used for headers and waits) is skewed, the store's is not.
func TestClockSkewAcrossInstances(t *testing.T) {
	r := testenv.StartRedis(t)
	const burst, rate = 5, 20.0
	n, w := skewRun(t, r, 2*time.Second)
	bound := burst + int64(rate*w.Seconds()) + 1
	t.Logf("redis TIME: %d admitted in %v, bound %d", n, w, bound)
	if n > bound {
		t.Errorf("three instances skewed ±30s admitted %d in %v, want ≤ burst + rate×window = %d", n, w, bound)
	}
	if n < bound*3/4 {
		t.Errorf("three instances skewed ±30s admitted %d in %v, want about %d: the rate is starved", n, w, bound)
	}
}
