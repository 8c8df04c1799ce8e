package api

import (
	"regexp"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Limits of a Config: anything beyond them is refused as absurd.
const (
	MaxRate        = 1_000_000_000_000 // rate, limit, burst and cost
	MinPeriod      = time.Millisecond
	MaxPeriod      = 366 * 24 * time.Hour
	MaxPriority    = 1000
	MaxMaxWait     = time.Minute
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

const (
	namePattern      = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
	methodPattern    = `^[A-Z]{1,16}$`
	headerPattern    = "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}"
	keySourcePattern = `^(ip|api_key|jwt|client|route|header:` + headerPattern + `)$`
	pathPattern      = `^/[^ ?#]*$`
)

var (
	nameRE      = regexp.MustCompile(namePattern)
	methodRE    = regexp.MustCompile(methodPattern)
	keySourceRE = regexp.MustCompile(keySourcePattern)
	pathRE      = regexp.MustCompile(pathPattern)
)

// tierBounds and ruleBounds are the limits of the fields of a Tier and a
// Rule, by their JSON and YAML names.
var (
	tierBounds = map[string]Bound{
		"name":      {Pattern: namePattern},
		"rate":      {Min: 1, Max: MaxRate, Range: true, Required: true},
		"period":    {MinDur: MinPeriod, MaxDur: MaxPeriod, Required: true},
		"burst":     rng(0, MaxRate),
		"algorithm": {Enum: algorithms},
		"align":     {Enum: aligns},
		"unlimited": {},
		"priority":  rng(0, MaxPriority),
		"alpha":     unit(multiplier.AlphaRange),
		"beta":      unit(multiplier.BetaRange),
		"floor":     unit(multiplier.FloorRange),
		"ceiling":   unit(multiplier.CeilingRange),
	}
	ruleBounds = map[string]Bound{
		"name":                {Pattern: namePattern, Required: true},
		"match":               {Required: true},
		"match.path":          {Pattern: pathPattern, MaxLen: MaxPathLen, Required: true},
		"match.methods":       {Pattern: methodPattern, MaxItems: 16},
		"key":                 {Pattern: keySourcePattern, MinItems: 1, MaxItems: MaxKeySources, Required: true},
		"algorithm":           {Enum: algorithms},
		"limit":               rng(0, MaxRate),
		"period":              {MinDur: MinPeriod, MaxDur: MaxPeriod},
		"burst":               rng(0, MaxRate),
		"align":               {Enum: aligns},
		"limits":              {MaxItems: MaxLimits},
		"cost":                rng(0, MaxRate),
		"hide_client_headers": {},
		"mode":                {Enum: modes},
		"max_wait":            {MaxDur: MaxMaxWait},
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
