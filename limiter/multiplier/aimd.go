package multiplier

import (
	"math"
	"strconv"
)

// AIMD defaults: a zero parameter of a tier means these, wherever a tier
// is configured (policy documents, the controller's settings). Floor has
// no constant default of its own: see [AIMD.WithDefaults].
const (
	DefaultAlpha   = 0.1
	DefaultBeta    = 0.5
	DefaultGrowth  = 4.0
	DefaultFloor   = 0.05
	DefaultCeiling = 1.0
)

// AIMD is a tier's control parameters, as the controller's law reads them
// (see controller.Tier for what each one does). Zero fields mean the
// defaults.
type AIMD struct {
	Alpha   float64 // additive increase per step, in AlphaRange
	Beta    float64 // deepest multiplicative decrease per step, in BetaRange
	Growth  float64 // largest growth factor of one healthy step, at least MinGrowth and finite
	Floor   float64 // lowest multiplier, in FloorRange and at most Ceiling
	Ceiling float64 // highest multiplier, in CeilingRange
}

// WithDefaults returns a with every zero field replaced by its default.
// The one rule for the floor: a zero Floor is min(DefaultFloor, Ceiling),
// so that a tier whose ceiling is below DefaultFloor is valid without a
// floor of its own (its multiplier then stays at the ceiling).
func (a AIMD) WithDefaults() AIMD {
	for _, f := range []struct {
		v   *float64
		def float64
	}{{&a.Alpha, DefaultAlpha}, {&a.Beta, DefaultBeta}, {&a.Growth, DefaultGrowth}, {&a.Ceiling, DefaultCeiling}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if a.Floor == 0 {
		a.Floor = DefaultFloor
		if a.Ceiling > 0 {
			a.Floor = math.Min(DefaultFloor, a.Ceiling)
		}
	}
	return a
}

// Range is the interval a parameter must be in once defaulted: (0, Max],
// or (0, Max) when Open.
type Range struct {
	Max  float64
	Open bool
}

// The bounds of the AIMD parameters. A floor must also be at most the
// ceiling, and Growth at least MinGrowth and finite.
var (
	AlphaRange   = Range{Max: 1}
	BetaRange    = Range{Max: 1, Open: true}
	FloorRange   = Range{Max: 1}
	CeilingRange = Range{Max: 1}
)

// MinGrowth is the smallest Growth: 1 leaves the increase additive.
const MinGrowth = 1.0

// Contains reports whether v is in r (NaN is not).
func (r Range) Contains(v float64) bool {
	return v > 0 && (v < r.Max || !r.Open && v == r.Max)
}

// String writes r as "(0, 1]" or "(0, 1)".
func (r Range) String() string {
	end := "]"
	if r.Open {
		end = ")"
	}
	return "(0, " + strconv.FormatFloat(r.Max, 'g', -1, 64) + end
}
