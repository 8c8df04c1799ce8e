package multiplier

import (
	"math"
	"testing"
)

func TestAIMDWithDefaults(t *testing.T) {
	for _, c := range []struct {
		in, want AIMD
	}{
		{AIMD{}, AIMD{DefaultAlpha, DefaultBeta, DefaultGrowth, DefaultFloor, DefaultCeiling}},
		// The floor rule: a ceiling below DefaultFloor is the floor too.
		{AIMD{Ceiling: 0.02}, AIMD{DefaultAlpha, DefaultBeta, DefaultGrowth, 0.02, 0.02}},
		{AIMD{Ceiling: 0.5}, AIMD{DefaultAlpha, DefaultBeta, DefaultGrowth, DefaultFloor, 0.5}},
		{AIMD{Alpha: 0.2, Beta: 0.9, Growth: 1, Floor: 0.3, Ceiling: 0.02}, AIMD{0.2, 0.9, 1, 0.3, 0.02}},
		// A bad ceiling is left for validation to refuse; the floor stays the default.
		{AIMD{Ceiling: -1}, AIMD{DefaultAlpha, DefaultBeta, DefaultGrowth, DefaultFloor, -1}},
	} {
		if got := c.in.WithDefaults(); got != c.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestRange(t *testing.T) {
	for _, c := range []struct {
		r    Range
		v    float64
		want bool
	}{
		{AlphaRange, 1, true}, {AlphaRange, 0.5, true}, {AlphaRange, 0, false}, {AlphaRange, 1.01, false},
		{BetaRange, 1, false}, {BetaRange, 0.99, true}, {BetaRange, math.NaN(), false}, {CeilingRange, math.Inf(1), false},
	} {
		if got := c.r.Contains(c.v); got != c.want {
			t.Errorf("%v.Contains(%v) = %v", c.r, c.v, got)
		}
	}
	if AlphaRange.String() != "(0, 1]" || BetaRange.String() != "(0, 1)" {
		t.Errorf("%v %v", AlphaRange, BetaRange)
	}
}
