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
	inside := map[Range][]float64{AlphaRange: {1, 0.5, 1e-9}, BetaRange: {0.99}}
	outside := map[Range][]float64{AlphaRange: {0, -0.5, 1.01}, BetaRange: {1, math.NaN()}, CeilingRange: {math.Inf(1)}}
	for r, vs := range inside {
		for _, v := range vs {
			if !r.Contains(v) {
				t.Errorf("%v does not contain %v", r, v)
			}
		}
	}
	for r, vs := range outside {
		for _, v := range vs {
			if r.Contains(v) {
				t.Errorf("%v contains %v", r, v)
			}
		}
	}
	if AlphaRange.String() != "(0, 1]" || BetaRange.String() != "(0, 1)" {
		t.Errorf("%v %v", AlphaRange, BetaRange)
	}
}
