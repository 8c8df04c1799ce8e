package enforce_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestZeroMultiplierShedsMost: a multiplier source that computes 0 (or NaN,
// or a negative value) sheds as much as the least multiplier a store
// applies, never as 1: Request.Multiplier 0 means "no multiplier", so
// passing 0 on would turn shedding off.
func TestZeroMultiplierShedsMost(t *testing.T) {
	codes := func(m float64) string {
		e, err := enforce.New(limiter.NewMemory(), perKeyPolicy(), enforce.Settings{Identifier: apiKeyIdentifier{},
			Tiers: assignments{"alice": "free"}, Multipliers: multipliers{"free": m}})
		if err != nil {
			t.Fatal(err)
		}
		h := e.Middleware(okHandler())
		out := ""
		for range 3 {
			out += fmt.Sprint(get(t, h, "/x", "X-API-Key", "alice").Code, " ")
		}
		return out
	}
	want := codes(limiter.MinMultiplier)
	if want == "200 200 200 " {
		t.Fatalf("the least multiplier admits the whole burst (%s): the test cannot tell", want)
	}
	for _, m := range []float64{0, math.NaN(), -0.5} {
		if got := codes(m); got != want {
			t.Errorf("multiplier %v: codes %s, want %s (as the least multiplier)", m, got, want)
		}
	}
}
