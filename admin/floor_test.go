package admin

import (
	"net/http"
	"testing"
)

// TestCeilingBelowDefaultFloor: the admin API accepts a tier with a ceiling
// below the default floor and no floor of its own (its floor is the
// ceiling: see policy's TestCeilingBelowDefaultFloor), rather than refusing
// "floor 0.05 exceeds ceiling 0.02".
func TestCeilingBelowDefaultFloor(t *testing.T) {
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
