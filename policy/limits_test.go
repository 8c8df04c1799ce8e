package policy

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestConfigErrorsReportsEveryProblem: every bad field of every tier and
// rule is reported, in order, not only the first one.
func TestConfigErrorsReportsEveryProblem(t *testing.T) {
	sec := Duration(time.Second)
	c := Config{
		Tiers: map[string]Tier{
			"free": {Rate: 0, Period: 0, Priority: 2000},
			"paid": {Rate: 10, Period: sec, Beta: 1},
		},
		Rules: []Rule{
			{Name: "a", Match: Match{Path: "x"}, Key: KeySources{"cookie"}, Mode: "later"},
			{Name: "b", Match: Match{Path: "/"}, Key: KeySources{"ip"}, Limit: -1, Fallback: "maybe",
				Lease: &Lease{Size: 0, TTL: Duration(2 * time.Minute)}},
		},
		DefaultTier: "gold",
	}
	var got []string
	for _, err := range ConfigErrors(c) {
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v is not a *FieldError", err)
		}
		got = append(got, fe.Field)
	}
	want := []string{"tiers.free.rate", "tiers.free.period", "tiers.free.priority", "tiers.paid.beta", "default_tier",
		"rules[0].match.path", "rules[0].key", "rules[0].mode", "rules[1].limit", "rules[1].period", "rules[1].fallback",
		"rules[1].lease.size", "rules[1].lease.ttl"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields\n got %v\nwant %v", got, want)
	}
	if err := ValidateConfig(c); err == nil || err.Error() != ConfigErrors(c)[0].Error() {
		t.Fatalf("ValidateConfig %v, want the first of ConfigErrors", err)
	}
}

// TestBoundsAreCopies: the bounds handed out cannot change validation.
func TestBoundsAreCopies(t *testing.T) {
	b := TierBounds()
	b["algorithm"].Enum[0] = "nope"
	b["rate"] = Bound{}
	if ValidateConfig(Config{Tiers: map[string]Tier{"x": {Rate: 0, Period: Duration(time.Second)}}}) == nil ||
		TierBounds()["algorithm"].Enum[0] != "token_bucket" {
		t.Fatal("changing the returned bounds changed the package's")
	}
}
