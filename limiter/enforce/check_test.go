package enforce_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// checkPolicy has the per-key rule on the tier quota and a "search" rule
// with its own quota of 2 per 10 s.
func checkPolicy() enforce.Policy {
	p := perKeyPolicy()
	p.Rules = append(p.Rules, enforce.Rule{Name: "search", Path: "/search", Keys: []string{"header:X-API-Key"},
		Limit: 2, Period: 10 * time.Second})
	return p
}

func checkEnforcer(t *testing.T, store limiter.Store, s enforce.Settings) *enforce.Enforcer {
	t.Helper()
	s.Identifier = apiKeyIdentifier{}
	if s.Tiers == nil {
		s.Tiers = assignments{"pat": "premium"}
	}
	e, err := enforce.New(store, checkPolicy(), s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func checkKeys(t *testing.T, e *enforce.Enforcer, qs ...enforce.Query) (enforce.Result, []enforce.Outcome) {
	t.Helper()
	out := make([]enforce.Outcome, len(qs))
	res, err := e.CheckKeys(context.Background(), qs, out)
	if err != nil {
		t.Fatalf("CheckKeys(%+v): %v", qs, err)
	}
	return res, out
}

// TestCheckKeysSharesTheMiddlewareBucket: a key-based check and the
// middleware spend the same bucket for the same client: what one spends
// the other sees.
func TestCheckKeysSharesTheMiddlewareBucket(t *testing.T) {
	store := redisStore(testenv.StartRedis(t).Client(), t, nil)
	e := checkEnforcer(t, store, enforce.Settings{})
	h := e.Middleware(okHandler())
	if w := get(t, h, "/x", "X-API-Key", "alice"); w.Code != 200 {
		t.Fatalf("middleware: %d", w.Code)
	}
	res, _ := checkKeys(t, e, enforce.Query{Rule: "per-key", Key: "alice"})
	if !res.Allowed || res.Tier != "free" || res.Rule != "per-key" || res.Decision.Remaining != 1 {
		t.Fatalf("check after one request: %+v, want allowed, free, per-key, 1 of 3 left", res)
	}
	if w := get(t, h, "/x", "X-API-Key", "alice"); w.Code != 200 || w.Header().Get(enforce.HeaderRemaining) != "0" {
		t.Fatalf("middleware after the check: %d, remaining %q; want 200 with 0 left", w.Code, w.Header().Get(enforce.HeaderRemaining))
	}
	res, _ = checkKeys(t, e, enforce.Query{Rule: "per-key", Key: "alice"})
	if res.Allowed || res.Status != http.StatusTooManyRequests || res.Reason() != limiter.OverQuota || res.RetryAfter != 20 {
		t.Fatalf("check on the spent bucket: %+v, want 429 over_quota, Retry-After 20 s", res)
	}
}

// TestCheckKeysMostRestrictiveWinsAndRefunds: several queries in one check
// report the one with the least remaining; when a later query refuses, the
// earlier ones get back what they took and the outcomes say who refused.
func TestCheckKeysMostRestrictiveWinsAndRefunds(t *testing.T) {
	store := redisStore(testenv.StartRedis(t).Client(), t, nil)
	e := checkEnforcer(t, store, enforce.Settings{})
	both := []enforce.Query{{Rule: "per-key", Key: "bob"}, {Rule: "search", Key: "bob"}}
	res, out := checkKeys(t, e, both...)
	// per-key: 2 of 3 left; search: 1 of 2 left → search is reported.
	if !res.Allowed || res.Rule != "search" || res.Decision.Remaining != 1 {
		t.Fatalf("first: %+v, want allowed reporting search with 1 left", res)
	}
	if !out[0].Asked || out[0].Decision.Remaining != 2 || out[0].Tier != "free" || out[1].Decision.Remaining != 1 ||
		out[1].Period != 10*time.Second {
		t.Fatalf("outcomes %+v", out)
	}
	checkKeys(t, e, both...) // search now at 0, per-key at 1
	res, out = checkKeys(t, e, both...)
	if res.Allowed || res.Rule != "search" || res.Status != http.StatusTooManyRequests {
		t.Fatalf("third: %+v, want 429 by search", res)
	}
	if out[0].Refused || !out[1].Refused || !out[1].Asked {
		t.Fatalf("outcomes %+v, want search refused, per-key not", out)
	}
	// per-key spent 1 on the third check and got it back: 1 left.
	states, err := e.Inspect(context.Background(), "bob")
	if err != nil || len(states) != 2 || states[0].Rule != "per-key" || states[0].Remaining != 1 {
		t.Fatalf("per-key after the refused check: %+v, %v; want 1 left (refunded)", states, err)
	}
	// A refusal by the first query leaves the second unasked.
	res, out = checkKeys(t, e, enforce.Query{Rule: "search", Key: "bob"}, enforce.Query{Rule: "per-key", Key: "bob"})
	if res.Allowed || !out[0].Refused || out[1].Asked {
		t.Fatalf("search first: %+v, %+v; want refused by the first, the second not asked", res, out)
	}
}

// TestCheckKeysTiersAndCost: the tier comes from the key's assignment, or
// from the query; the check's tier is the most important; the cost spends
// that many tokens; shed is 503 as in the middleware.
func TestCheckKeysTiersAndCost(t *testing.T) {
	store := redisStore(testenv.StartRedis(t).Client(), t, nil)
	e := checkEnforcer(t, store, enforce.Settings{Multipliers: multipliers{"free": 0.34}})
	res, out := checkKeys(t, e, enforce.Query{Rule: "per-key", Key: "pat", Cost: 3})
	if !res.Allowed || res.Tier != "premium" || out[0].Decision.Remaining != 2 || out[0].Decision.Limit != 5 {
		t.Fatalf("pat, cost 3: %+v %+v; want premium, 2 of 5 left", res, out)
	}
	res, _ = checkKeys(t, e, enforce.Query{Rule: "per-key", Key: "ann", Tier: "premium"},
		enforce.Query{Rule: "search", Key: "ann"})
	if res.Tier != "premium" || res.Priority != 0 {
		t.Fatalf("premium and free queries: tier %q priority %d, want premium 0", res.Tier, res.Priority)
	}
	// free under load (admission 1 of 3): the second check is shed.
	checkKeys(t, e, enforce.Query{Rule: "per-key", Key: "carl"})
	res, _ = checkKeys(t, e, enforce.Query{Rule: "per-key", Key: "carl"})
	if res.Allowed || res.Status != http.StatusServiceUnavailable || res.Reason() != limiter.Shed {
		t.Fatalf("free under load: %+v, want 503 shed", res)
	}
}

// TestCheckKeysRejectsInvalidQueries: an unknown rule or tier, or a cost
// the bucket cannot hold, fails the whole check naming the query and
// field, and spends nothing.
func TestCheckKeysRejectsInvalidQueries(t *testing.T) {
	store := redisStore(testenv.StartRedis(t).Client(), t, nil)
	e := checkEnforcer(t, store, enforce.Settings{})
	for _, tc := range []struct {
		name  string
		bad   enforce.Query
		field string
	}{
		{"unknown rule", enforce.Query{Rule: "nope", Key: "dan"}, "rule"},
		{"unknown tier", enforce.Query{Rule: "per-key", Key: "dan", Tier: "gold"}, "tier"},
		{"cost above capacity", enforce.Query{Rule: "per-key", Key: "dan", Cost: 4}, "cost"},
		{"negative cost", enforce.Query{Rule: "per-key", Key: "dan", Cost: -1}, "cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.CheckKeys(context.Background(), []enforce.Query{{Rule: "per-key", Key: "dan"}, tc.bad}, nil)
			var qe *enforce.QueryError
			if !errors.As(err, &qe) || !errors.Is(err, enforce.ErrQuery) || qe.Index != 1 || qe.Field != tc.field {
				t.Fatalf("err %v, want a QueryError for query 1, field %s", err, tc.field)
			}
		})
	}
	states, err := e.Inspect(context.Background(), "dan")
	if err != nil || states[0].Remaining != 3 {
		t.Fatalf("dan's per-key bucket after invalid checks: %+v, %v; want whole (3)", states, err)
	}
}
