package enforce_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// forBothStores runs f against the in-memory store and a Redis store, both
// on clock.
func forBothStores(t *testing.T, f func(t *testing.T, clock *fakeclock.Clock, store limiter.Store)) {
	t.Run("memory", func(t *testing.T) {
		clock := fakeclock.New(t0)
		f(t, clock, limiter.NewMemory(limiter.WithClock(clock.Now)))
	})
	t.Run("redis", func(t *testing.T) {
		r := testenv.StartRedis(t)
		clock := fakeclock.New(t0)
		f(t, clock, redisStore(r.Client(), t, clock.Now))
	})
}

// quotaEnforcer enforces p on store at clock, with keys from X-API-Key and
// "vip" assigned to tier internal.
func quotaEnforcer(t *testing.T, store limiter.Store, clock *fakeclock.Clock, p enforce.Policy) *enforce.Enforcer {
	t.Helper()
	e, err := enforce.New(store, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Now: clock.Now,
		Tiers: assignments{"vip": "internal"}, UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// send sends GET / with key through e's middleware.
func send(e *enforce.Enforcer, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-API-Key", key)
	rec := httptest.NewRecorder()
	e.Middleware(okHandler()).ServeHTTP(rec, req)
	return rec
}

func utcAt(y int, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
}

// TestSeveralLimitsAllMustPass: a rule with a per-minute bucket and a
// calendar-day window admits only what both allow, and a request the day
// limit refuses spends nothing of the per-minute bucket: its take is given
// back (spend, then refund; the refund of a token bucket is exact).
func TestSeveralLimitsAllMustPass(t *testing.T) {
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 100, Period: time.Minute}},
		Rules: []enforce.Rule{{Name: "api", Path: "/", Keys: []string{"api_key"}, Limits: []enforce.Limit{
			{Limit: 5, Period: time.Minute},
			{Algorithm: limiter.FixedWindow, Limit: 3, Period: limiter.Day, Align: limiter.AlignCalendar},
		}}}}
	forBothStores(t, func(t *testing.T, clock *fakeclock.Clock, store limiter.Store) {
		e := quotaEnforcer(t, store, clock, p)
		steps := []struct {
			name   string
			at     time.Time
			status int
			limit  string // X-RateLimit-Limit: the most restrictive limit's
		}{
			{"t0: both admit", utcAt(2024, 2, 29, 23, 59, 50), 200, "3"},
			{"t1", utcAt(2024, 2, 29, 23, 59, 50), 200, "3"},
			{"t2: the day's third", utcAt(2024, 2, 29, 23, 59, 50), 200, "3"},
			{"t3: the day limit refuses", utcAt(2024, 2, 29, 23, 59, 50), 429, "3"},
			{"t4: refused again", utcAt(2024, 2, 29, 23, 59, 55), 429, "3"},
			{"t5: refused again", utcAt(2024, 2, 29, 23, 59, 59), 429, "3"},
			{"t6: a new UTC day, and the minute bucket has 2 left (not 0)", utcAt(2024, 3, 1, 0, 0, 0), 200, "5"},
			{"t7", utcAt(2024, 3, 1, 0, 0, 0), 200, "5"},
			{"t8: the minute bucket refuses", utcAt(2024, 3, 1, 0, 0, 0), 429, "5"},
			{"t9: the day limit was not spent by t8", utcAt(2024, 3, 1, 0, 0, 12), 200, "3"},
		}
		for _, st := range steps {
			clock.Set(st.at)
			rec := send(e, "alice")
			if rec.Code != st.status || rec.Header().Get(enforce.HeaderLimit) != st.limit {
				t.Fatalf("%s: %d limit %q, want %d limit %q", st.name, rec.Code, rec.Header().Get(enforce.HeaderLimit),
					st.status, st.limit)
			}
			if st.name == "t5: refused again" {
				b, err := e.Inspect(context.Background(), "alice")
				if err != nil || len(b) != 2 || b[0].Rule != "api" || b[1].Rule != "api#2" || b[1].Align != "calendar" {
					t.Fatalf("inspect: %+v %v", b, err)
				}
				// 3 taken at t0..t2, 9 s of refill (0.75): the refused requests took nothing.
				if b[0].Remaining != 2 || b[1].Remaining != 0 || b[1].ResetAfter != time.Second {
					t.Fatalf("%s: buckets %+v, want 2 left per minute, 0 today resetting in 1s", st.name, b)
				}
			}
		}
	})
}

// TestUnlimitedTier: a client of an unlimited tier is never refused by a
// rule, neither over quota (429) nor shed by the multiplier (503), and its
// requests are still counted in its bucket and reported in the headers.
func TestUnlimitedTier(t *testing.T) {
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 2, Period: time.Minute, Priority: 1},
			{Name: "internal", Limit: 2, Period: time.Minute, Unlimited: true}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}},
			{Name: "slow", Path: "/", Keys: []string{"api_key"}, Limit: 1, Period: time.Hour, Mode: enforce.ModeDelay,
				MaxWait: time.Minute}},
	}
	forBothStores(t, func(t *testing.T, clock *fakeclock.Clock, store limiter.Store) {
		e, err := enforce.New(store, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Now: clock.Now,
			Tiers: assignments{"vip": "internal"}, UnassignedKeys: enforce.UnassignedDefaultTier,
			Multipliers: multipliers{"internal": 0.01, "free": 1},
			Sleep:       func(context.Context, time.Duration) error { t.Error("an unlimited client waited"); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("X-API-Key", "vip")
			res := e.Check(context.Background(), req)
			if !res.Allowed || res.Tier != "internal" || (i > 0) != res.Unlimited {
				t.Fatalf("vip request %d: %+v, want allowed (unlimited after the first)", i, res)
			}
		}
		if rec := send(e, "vip"); rec.Code != 200 || rec.Header().Get(enforce.HeaderRemaining) != "0" {
			t.Fatalf("vip: %d remaining %q, want 200 with its usage (0 left) in the headers", rec.Code,
				rec.Header().Get(enforce.HeaderRemaining))
		}
		b, err := e.Inspect(context.Background(), "vip")
		if err != nil || len(b) != 2 || b[0].Remaining != 0 || b[1].Remaining != 0 {
			t.Fatalf("vip buckets %+v %v: its requests were not counted", b, err)
		}
		e = quotaEnforcer(t, store, clock, enforce.Policy{Tiers: p.Tiers, Rules: p.Rules[:1]})
		send(e, "bob")
		send(e, "bob")
		if rec := send(e, "bob"); rec.Code != 429 {
			t.Fatalf("bob of free: %d, want 429 (limits apply to others)", rec.Code)
		}
	})
}

// TestHideClientHeaders: a rule that hides its headers is left out of
// them, even when it is the most restrictive; a refusal by it carries only
// Retry-After; a request only hiding rules apply to carries none.
func TestHideClientHeaders(t *testing.T) {
	tiers := []enforce.Tier{{Name: "free", Limit: 10, Period: time.Minute}}
	shown := enforce.Rule{Name: "shown", Path: "/", Keys: []string{"api_key"}}
	hidden := enforce.Rule{Name: "hidden", Path: "/", Keys: []string{"api_key"}, Limit: 2, Period: time.Minute,
		HideHeaders: true}
	rateHeaders := []string{enforce.HeaderLimit, enforce.HeaderRemaining, enforce.HeaderReset, enforce.HeaderPolicy,
		enforce.HeaderRateLimit}
	forBothStores(t, func(t *testing.T, clock *fakeclock.Clock, store limiter.Store) {
		e := quotaEnforcer(t, store, clock, enforce.Policy{Tiers: tiers, Rules: []enforce.Rule{hidden, shown}})
		rec := send(e, "alice")
		if rec.Code != 200 || rec.Header().Get(enforce.HeaderLimit) != "10" ||
			rec.Header().Get(enforce.HeaderPolicy) != `"shown";q=10;w=60` {
			t.Fatalf("t0: %d %v, want the shown rule's headers only", rec.Code, rec.Header())
		}
		send(e, "alice")
		rec = send(e, "alice")
		if rec.Code != 429 || rec.Header().Get(enforce.HeaderRetryAfter) != "30" {
			t.Fatalf("t2: %d %v, want 429 by the hidden rule with Retry-After 30", rec.Code, rec.Header())
		}
		for _, h := range rateHeaders {
			if v := rec.Header().Values(h); len(v) > 0 {
				t.Errorf("t2: refusal by the hidden rule has %s: %q", h, v)
			}
		}
		e = quotaEnforcer(t, store, clock, enforce.Policy{Tiers: tiers, Rules: []enforce.Rule{hidden}})
		rec = send(e, "bob")
		if rec.Code != http.StatusOK {
			t.Fatalf("bob: %d", rec.Code)
		}
		for _, h := range append(rateHeaders, enforce.HeaderRetryAfter) {
			if v := rec.Header().Values(h); len(v) > 0 {
				t.Errorf("only a hidden rule applied, yet %s: %q", h, v)
			}
		}
	})
}

// TestSeveralLimitsValidation: a rule sets limits or limit, each limit is
// valid, and the cost fits every limit.
func TestSeveralLimitsValidation(t *testing.T) {
	tiers := []enforce.Tier{{Name: "free", Limit: 10, Period: time.Minute}}
	ok := []enforce.Limit{{Limit: 5, Period: time.Second}}
	bad := map[string]enforce.Rule{
		"both":     {Limit: 5, Period: time.Second, Limits: ok},
		"invalid":  {Limits: []enforce.Limit{{Limit: 5, Period: time.Second}, {Limit: 0, Period: time.Second}}},
		"calendar": {Limits: []enforce.Limit{{Limit: 5, Period: 2 * time.Hour, Algorithm: limiter.FixedWindow, Align: limiter.AlignCalendar}}},
		"cost":     {Cost: 6, Limits: []enforce.Limit{{Limit: 10, Period: time.Second}, {Limit: 5, Period: time.Hour}}},
		"too many": {Limits: make([]enforce.Limit, enforce.MaxLimits+1)},
	}
	for name, r := range bad {
		r.Name, r.Path, r.Keys = "r", "/", []string{"ip"}
		p := enforce.Policy{Tiers: tiers, Rules: []enforce.Rule{r}}
		if err := p.Validate(); err == nil {
			t.Errorf("%s: valid, want an error", name)
		}
	}
}
