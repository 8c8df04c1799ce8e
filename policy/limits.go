package policy

import (
	"regexp"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Limits of a Config of its own: anything beyond them is refused as
// absurd. Those it shares with enforcement are the owners': rate, limit,
// burst and cost within limiter.MaxLimit, periods within limiter.MinPeriod
// and limiter.MaxPeriod, priority within enforce.MaxPriority, max_wait
// within enforce.MaxDelay, limits within enforce.MaxLimits.
const (
	MaxLeaseSize   = 1_000_000
	MaxLeaseTTL    = time.Minute
	MaxTiers       = 1000
	MaxRules       = 1000
	MaxAssignments = 100_000
	MaxKeyLen      = 256 // bytes of an assigned client key
	MaxPathLen     = 1024
	MaxKeySources  = 8
	MaxPinTTL      = 30 * 24 * time.Hour
)

// Bound is the rule validation applies to one field of a Tier or a Rule.
// Validation reads it, the configuration's JSON Schema (`throttled config
// schema`) is generated from it and a test checks openapi.json against it,
// so that a limit is written once. Zero fields mean no constraint.
type Bound struct {
	// Min and Max bound a number, inclusively, when Range is set; with
	// ExclusiveMax, Max itself is refused.
	Min, Max     float64
	Range        bool
	ExclusiveMax bool
	// MinDur and MaxDur bound a duration (0 MaxDur: none).
	MinDur, MaxDur time.Duration
	// Enum lists the values of a string ("" means the first).
	Enum []string
	// Pattern is a regular expression for a string, or for each item of a list.
	Pattern string
	// MaxLen bounds the bytes of a string; MinItems and MaxItems a list.
	MaxLen             int
	MinItems, MaxItems int
	// Required fields must be present (and, for numbers, set).
	Required bool
}

func rng(lo, hi float64) Bound { return Bound{Min: lo, Max: hi, Range: true} }

// unit is the Bound of an AIMD parameter: 0 (the default) or within r.
func unit(r multiplier.Range) Bound {
	return Bound{Min: 0, Max: r.Max, Range: true, ExclusiveMax: r.Open}
}

// pathPattern is a rule's match.path; the other patterns are enforce's.
const pathPattern = `^/[^ ?#]*$`

var (
	nameRE      = regexp.MustCompile(enforce.NamePattern)
	methodRE    = regexp.MustCompile(enforce.MethodPattern)
	keySourceRE = regexp.MustCompile(enforce.KeySourcePattern)
	pathRE      = regexp.MustCompile(pathPattern)
)

// Enumerations of a Config: the owners' names, the first the default.
var (
	algorithms = limiter.AlgorithmNames()
	aligns     = limiter.AlignNames()
	fallbacks  = limiter.FallbackPolicyNames()
	modes      = enforce.ModeNames()
)

// tierBounds and ruleBounds are the limits of the fields of a Tier and a
// Rule, by their JSON and YAML names.
var (
	tierBounds = map[string]Bound{
		"name":      {Pattern: enforce.NamePattern},
		"rate":      {Min: 1, Max: limiter.MaxLimit, Range: true, Required: true},
		"period":    {MinDur: limiter.MinPeriod, MaxDur: limiter.MaxPeriod, Required: true},
		"burst":     rng(0, limiter.MaxLimit),
		"algorithm": {Enum: algorithms},
		"align":     {Enum: aligns},
		"unlimited": {},
		"priority":  rng(0, enforce.MaxPriority),
		"alpha":     unit(multiplier.AlphaRange),
		"beta":      unit(multiplier.BetaRange),
		"floor":     unit(multiplier.FloorRange),
		"ceiling":   unit(multiplier.CeilingRange),
	}
	ruleBounds = map[string]Bound{
		"name":                {Pattern: enforce.NamePattern, Required: true},
		"match":               {Required: true},
		"match.path":          {Pattern: pathPattern, MaxLen: MaxPathLen, Required: true},
		"match.methods":       {Pattern: enforce.MethodPattern, MaxItems: 16},
		"key":                 {Pattern: enforce.KeySourcePattern, MinItems: 1, MaxItems: MaxKeySources, Required: true},
		"algorithm":           {Enum: algorithms},
		"limit":               rng(0, limiter.MaxLimit),
		"period":              {MinDur: limiter.MinPeriod, MaxDur: limiter.MaxPeriod},
		"burst":               rng(0, limiter.MaxLimit),
		"align":               {Enum: aligns},
		"limits":              {MaxItems: enforce.MaxLimits},
		"cost":                rng(0, limiter.MaxLimit),
		"hide_client_headers": {},
		"mode":                {Enum: modes},
		"max_wait":            {MaxDur: enforce.MaxDelay},
		"fallback":            {Enum: fallbacks},
		"lease":               {},
		"lease.size":          {Min: 1, Max: MaxLeaseSize, Range: true, Required: true},
		"lease.ttl":           {MaxDur: MaxLeaseTTL},
	}
)

// TierBounds returns the limits of the fields of a Tier, by field name.
func TierBounds() map[string]Bound { return copyBounds(tierBounds) }

// RuleBounds returns the limits of the fields of a Rule, by field name
// ("match.path" for a field of Match).
func RuleBounds() map[string]Bound { return copyBounds(ruleBounds) }

func copyBounds(m map[string]Bound) map[string]Bound {
	out := make(map[string]Bound, len(m))
	for k, b := range m {
		b.Enum = append([]string(nil), b.Enum...)
		out[k] = b
	}
	return out
}

// checkInt refuses v outside b's range.
func (b Bound) checkInt(field string, v int64) error {
	if v < int64(b.Min) || v > int64(b.Max) {
		return fieldErr(field, "%d: want %d..%d", v, int64(b.Min), int64(b.Max))
	}
	return nil
}

// checkDur refuses d outside b's durations.
func (b Bound) checkDur(field string, d Duration) error {
	if d.D() < b.MinDur || d.D() > b.MaxDur {
		return fieldErr(field, "%v: want %v..%v", d, b.MinDur, b.MaxDur)
	}
	return nil
}

// checkEnum accepts "" (the default) or one of b.Enum.
func (b Bound) checkEnum(field, v string) error {
	if v != "" && !contains(b.Enum, v) {
		return fieldErr(field, "%q: want %s", v, quoteList(b.Enum))
	}
	return nil
}

// checkUnit accepts 0 (the default) or a finite number in (Min, Max], or
// in (Min, Max) with ExclusiveMax.
func (b Bound) checkUnit(field string, v float64) error {
	if v == 0 {
		return nil
	}
	if r := (multiplier.Range{Max: b.Max, Open: b.ExclusiveMax}); !r.Contains(v) {
		return fieldErr(field, "%v: want a number in %v, or 0 for the default", v, r)
	}
	return nil
}

// errList collects the problems of a Config, in order.
type errList []error

func (l *errList) add(errs ...error) {
	for _, err := range errs {
		if err != nil {
			*l = append(*l, err)
		}
	}
}

// DurationRange writes b's durations as "1ms..8784h0m0s", as the schemas
// describe them.
func (b Bound) DurationRange() string { return b.MinDur.String() + ".." + b.MaxDur.String() }
