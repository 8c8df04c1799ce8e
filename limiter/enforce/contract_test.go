package enforce_test

import (
	"context"
	"net/http"
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
		if want := []int{200, 503, 200, 429}; !equalInts(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		// wide: 3 taken (the admitted two and the shed one), the 429 given back.
		b, err := whole.Inspect(context.Background(), "alice")
		if err != nil || len(b) != 2 || b[0].Remaining != 97 || b[1].Remaining != 0 {
			t.Fatalf("buckets %+v, %v; want wide 97 left (the shed spent), narrow 0", b, err)
		}
	})
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
