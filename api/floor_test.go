package api

import (
	"net/http"
	"testing"
)

// TestCeilingBelowDefaultFloor: a tier with a ceiling below the default
// floor and no floor of its own gets floor = ceiling (the controller's
// rule), so the admin API accepts it rather than refusing "floor 0.05
// exceeds ceiling 0.02".
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
	f := newFixture(t)
	r := f.do("POST", "/v1/tiers", writeTok, map[string]any{"name": "low", "rate": 10, "period": "1s", "ceiling": 0.02})
	want(t, r, http.StatusCreated)
	if got := f.snapshot().Config.Tiers["low"].WithDefaults().Floor; got != 0.02 {
		t.Fatalf("stored tier's effective floor %v, want 0.02", got)
	}
	// A floor above the ceiling is still refused, naming the floor.
	r = f.do("POST", "/v1/tiers", writeTok, map[string]any{"name": "bad", "rate": 10, "period": "1s", "ceiling": 0.02, "floor": 0.03})
	want(t, r, http.StatusBadRequest)
	if m := r.obj(t); m["field"] != "tiers.bad.floor" {
		t.Fatalf("field %v, want tiers.bad.floor: %s", m["field"], r.body)
	}
}
