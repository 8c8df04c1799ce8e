package enforce_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// named records the rule names it decided.
type named struct{ got []string }

func (n *named) Decide(_ context.Context, req limiter.Request) (limiter.Decision, error) {
	n.got = append(n.got, req.Rule.Name)
	return limiter.Decision{Allowed: true}, nil
}

// TestLeaseRules: the named rules go to the leasing store, the others and
// tier admission to the shared one.
func TestLeaseRules(t *testing.T) {
	shared, leased := &named{}, &named{}
	s := enforce.LeaseRules(shared, leased, "hot", enforce.TierAdmissionRule)
	for _, name := range []string{"hot", "cold", enforce.TierAdmissionRule, "hot"} {
		r := limiter.Rule{Name: name, Limit: 1, Period: time.Second}
		if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r}); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(leased.got); got != 2 || leased.got[0] != "hot" || leased.got[1] != "hot" {
		t.Errorf("leased store decided %v, want [hot hot]", leased.got)
	}
	if got := len(shared.got); got != 2 || shared.got[0] != "cold" || shared.got[1] != enforce.TierAdmissionRule {
		t.Errorf("shared store decided %v, want [cold %s]", shared.got, enforce.TierAdmissionRule)
	}
	if enforce.LeaseRules(shared, leased) != limiter.Store(shared) {
		t.Error("no lease rules: want the shared store itself")
	}
}
