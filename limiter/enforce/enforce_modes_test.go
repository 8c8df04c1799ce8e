package enforce_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// t0 is aligned to a second, so 1 s windows start at t0.
var t0 = time.Unix(1_700_000_000, 0)

func TestShadowModeNeverRefuses(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
			{Name: "trial", Path: "/", Keys: []string{"ip"}, Limit: 2, Period: time.Minute, Mode: enforce.ModeShadow},
		}}
		e, err := enforce.New(store, p, enforce.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(e)
		for i := 0; i < 5; i++ {
			w := get(t, h, "/")
			if w.Code != 200 {
				t.Fatalf("shadow refused request %d: %d", i+1, w.Code)
			}
			// Nobody enforces the shadow rule's limit: it is not shown.
			wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": "", "Retry-After": ""})
		}
		// The shadow decisions were recorded: the Check says so.
		req := httptest.NewRequest("GET", "/", nil)
		if res := e.Check(context.Background(), req); !res.Shadowed || !res.Allowed {
			t.Fatalf("Check: %+v, want allowed and shadowed", res)
		}
	})
}

// fakeSleep records waits instead of sleeping and moves a fake clock.
type fakeSleep struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (f *fakeSleep) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeSleep) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	f.now = f.now.Add(d)
	return nil
}

func TestDelayModeWaitsForCapacity(t *testing.T) {
	fs := &fakeSleep{now: t0}
	// The memory store on the same fake clock, so waiting refills it.
	store := limiter.NewMemory(limiter.WithClock(fs.Now))
	p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second, Burst: 1,
			Mode: enforce.ModeDelay, MaxWait: 250 * time.Millisecond},
	}}
	e, err := enforce.New(store, p, enforce.Settings{Now: fs.Now, Sleep: fs.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range adapters {
		h := a.wrap(e)
		fs.now = fs.now.Add(time.Second) // full bucket
		fs.waits = nil
		for i := 0; i < 3; i++ {
			if w := get(t, h, "/"); w.Code != 200 {
				t.Fatalf("%s: request %d: %d, want 200 after waiting", a.name, i+1, w.Code)
			}
		}
		if len(fs.waits) != 2 || fs.waits[0] != 100*time.Millisecond || fs.waits[1] != 100*time.Millisecond {
			t.Fatalf("%s: waits %v, want two of 100ms", a.name, fs.waits)
		}
	}
	// A wait longer than MaxWait refuses at once.
	p.Rules[0].MaxWait = 50 * time.Millisecond
	if err := e.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	fs.waits = nil
	get(t, adapters[0].wrap(e), "/")
	if w := get(t, adapters[0].wrap(e), "/"); w.Code != 429 || len(fs.waits) != 0 {
		t.Fatalf("wait 100ms > max 50ms: %d after waits %v, want 429 at once", w.Code, fs.waits)
	}
}

// TestDelayModeCancelledContextEndsWait: a request whose context ends
// while it waits is refused then and there: one wait begun, no more store
// calls, no time passed. A delay that ignored the cancellation would wait
// again (this fake then lets the time pass) and be admitted.
func TestDelayModeCancelledContextEndsWait(t *testing.T) {
	fs := &fakeSleep{now: t0}
	store := &countingStore{Store: limiter.NewMemory(limiter.WithClock(fs.Now))}
	sleeps := 0
	sleep := func(ctx context.Context, d time.Duration) error {
		sleeps++
		if sleeps == 1 {
			if ctx.Err() == nil {
				t.Error("the first wait began with a live context")
			}
			return ctx.Err()
		}
		return fs.Sleep(context.Background(), d)
	}
	p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second, Burst: 1,
			Mode: enforce.ModeDelay, MaxWait: time.Second},
	}}
	e, err := enforce.New(store, p, enforce.Settings{Now: fs.Now, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	if res := e.Check(context.Background(), httptest.NewRequest("GET", "/", nil)); !res.Allowed {
		t.Fatalf("the burst: %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := store.n.Load()
	res := e.Check(ctx, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	if res.Allowed || res.Status != http.StatusTooManyRequests {
		t.Fatalf("cancelled request: %+v, want refused (429)", res)
	}
	if calls := store.n.Load() - before; sleeps != 1 || calls != 1 || !fs.Now().Equal(t0) {
		t.Fatalf("cancelled request: %d waits, %d store calls, clock at t0%+v; want 1 wait, 1 call, no time passed",
			sleeps, calls, fs.Now().Sub(t0))
	}
}

// TestDelayModeOnRedis: with real time and a real Redis, a request that
// would be refused waits for capacity instead (both adapters).
func TestDelayModeOnRedis(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
			{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second, Burst: 1,
				Mode: enforce.ModeDelay, MaxWait: 2 * time.Second},
		}}
		e, err := enforce.New(store, p, enforce.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(e)
		start := time.Now()
		for i := 0; i < 4; i++ {
			if w := get(t, h, "/"); w.Code != 200 {
				t.Fatalf("request %d: %d, want 200 after waiting", i+1, w.Code)
			}
		}
		// Burst 1 at 10/s: the last three each waited for a token (≈100 ms).
		if el := time.Since(start); el < 250*time.Millisecond {
			t.Fatalf("4 requests through a 10/s, burst-1 rule in %v: nobody waited", el)
		}
		p.Rules[0].MaxWait = 10 * time.Millisecond
		if err := e.SetPolicy(p); err != nil {
			t.Fatal(err)
		}
		if w := get(t, h, "/"); w.Code != 429 {
			t.Fatalf("wait over max_wait: %d, want 429", w.Code)
		}
	})
}
