package enforce_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestShedByALaterRuleKeepsQuotaSpent: a request that a later rule sheds
// (its multiplier) keeps what the earlier rules took, as a shed by one rule
// keeps that rule's quota spent: a refusal for load gives no quota back.
// A refusal for quota by the later rule still gives the earlier ones back.
func TestShedByALaterRuleKeepsQuotaSpent(t *testing.T) {
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 3, Period: time.Hour, Burst: 3}},
		Rules: []enforce.Rule{
			{Name: "wide", Path: "/", Keys: []string{"header:X-API-Key"}, Limit: 100, Period: time.Hour, Burst: 100},
			{Name: "narrow", Path: "/", Keys: []string{"header:X-API-Key"}},
		}}
	forBothStores(t, func(t *testing.T, clock *fakeclock.Clock, store limiter.Store) {
		cut, err := enforce.New(store, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Now: clock.Now,
			Multipliers: multipliers{"free": 0.5}}) // narrow admits 1.5 of its 3: the second is shed
		if err != nil {
			t.Fatal(err)
		}
		whole, err := enforce.New(store, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, e := range []*enforce.Enforcer{cut, cut, whole, whole} { // shed, then over narrow's quota
			rec := send(e, "alice")
			got = append(got, rec.Code)
			if rec.Code != http.StatusOK && refusal(t, rec).Rule != "narrow" {
				t.Fatalf("refused by %+v, want narrow", refusal(t, rec))
			}
		}
		if want := []int{200, 503, 200, 429}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		// wide: 3 taken (the admitted two and the shed one), the 429 given back.
		b, err := whole.Inspect(context.Background(), "alice")
		if err != nil || len(b) != 2 || b[0].Remaining != 97 || b[1].Remaining != 0 {
			t.Fatalf("buckets %+v, %v; want wide 97 left (the shed spent), narrow 0", b, err)
		}
	})
}

// TestQuotaFirstAcrossRules: a request that an earlier rule would shed
// and a later rule refuses for quota is 429, by the later rule, through
// the middleware and CheckKeys alike; the earlier rule's quota is given
// back, as for any refusal for quota. Shed alone, it is 503 by the
// shedding rule, and both rules' quotas stay spent.
func TestQuotaFirstAcrossRules(t *testing.T) {
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 100, Period: time.Hour, Burst: 100}},
		Rules: []enforce.Rule{
			{Name: "wide", Path: "/", Keys: []string{"header:X-API-Key"}}, // the tier's: 100, shed under the cut
			{Name: "narrow", Path: "/", Keys: []string{"header:X-API-Key"}, Limit: 3, Period: time.Hour, Burst: 3},
		}}
	qs := []enforce.Query{{Rule: "wide", Key: "alice"}, {Rule: "narrow", Key: "alice"}}
	forBothStores(t, func(t *testing.T, clock *fakeclock.Clock, store limiter.Store) {
		newEnforcer := func(m float64) *enforce.Enforcer {
			e, err := enforce.New(store, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Now: clock.Now,
				Multipliers: multipliers{"free": m}})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		cut, whole := newEnforcer(limiter.MinMultiplier), newEnforcer(1) // wide admits 1 (its admission capacity) / all
		type answer struct {
			status int
			rule   string
		}
		var got []answer
		for i, e := range []*enforce.Enforcer{whole, cut, cut, cut, cut} {
			var a answer
			if i%2 == 0 {
				rec := send(e, "alice")
				a.status = rec.Code
				if rec.Code != http.StatusOK {
					a.rule = refusal(t, rec).Rule
				}
			} else {
				out := make([]enforce.Outcome, 2)
				res, err := e.CheckKeys(context.Background(), qs, out)
				if err != nil {
					t.Fatal(err)
				}
				a.status, a.rule = res.Status, res.Rule
				if res.Allowed {
					a.status, a.rule = http.StatusOK, ""
				}
				if refusedBy := map[string]int{"wide": 0, "narrow": 1}; !res.Allowed && !out[refusedBy[res.Rule]].Refused {
					t.Errorf("check %d: outcomes %+v: the refusing query (%s) is not marked Refused", i, out, res.Rule)
				}
			}
			got = append(got, a)
		}
		want := []answer{{200, ""}, {200, ""}, {503, "wide"}, {429, "narrow"}, {429, "narrow"}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers %v, want %v (shed by wide once narrow is at its last; then over narrow's quota, whatever wide says)", got, want)
		}
		// wide: the two admitted and the shed one spent, the two 429s given
		// back; narrow: spent by the shed one too (it admitted it).
		b, err := whole.Inspect(context.Background(), "alice")
		if err != nil || len(b) != 2 || b[0].Remaining != 97 || b[1].Remaining != 0 {
			t.Fatalf("buckets %+v, %v; want wide 97 left, narrow 0", b, err)
		}
	})
}
