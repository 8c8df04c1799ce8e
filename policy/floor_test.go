package policy

import (
	"errors"
	"testing"
)

// TestCeilingBelowDefaultFloor: a tier with a ceiling below the default
// floor and no floor of its own gets floor = ceiling (the controller's
// rule, multiplier.AIMD.WithDefaults), so validation accepts it rather than
// refusing "floor 0.05 exceeds ceiling 0.02"; a floor above the ceiling is
// still refused, naming the floor. (admin's TestCeilingBelowDefaultFloor
// writes such tiers through the API.)
func TestCeilingBelowDefaultFloor(t *testing.T) {
	low := Tier{Rate: 10, Period: sec(1), Ceiling: 0.02}
	if d := low.WithDefaults(); d.Floor != 0.02 || d.Ceiling != 0.02 {
		t.Fatalf("WithDefaults: floor %v ceiling %v, want both 0.02", d.Floor, d.Ceiling)
	}
	c := testConfig()
	c.Tiers["low"] = low
	if err := ValidateConfig(c); err != nil {
		t.Fatalf("ValidateConfig: %v", err)
	}
	c.Tiers["low"] = Tier{Rate: 10, Period: sec(1), Ceiling: 0.02, Floor: 0.03}
	var fe *FieldError
	if err := ValidateConfig(c); !errors.As(err, &fe) || fe.Field != "tiers.low.floor" {
		t.Fatalf("floor above the ceiling: %v, want a FieldError naming tiers.low.floor", err)
	}
}
