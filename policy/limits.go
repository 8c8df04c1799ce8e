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
	MaxLeaseKeys   = 10_000_000
	MaxTiers       = 1000
	MaxRules       = 1000
	MaxAssignments = 100_000
	MaxKeyLen      = 256 // bytes of an assigned client key
	MaxPathLen     = 1024
	MaxKeySources  = 8
	MaxPinTTL      = 30 * 24 * time.Hour
)

// unit is the Bound of an AIMD parameter: 0 (the default) or within r.
func unit(r multiplier.Range) Bound {
	return Bound{Min: 0, Max: r.Max, Range: true, ExclusiveMax: r.Open,
		Msg: "want a number in " + r.String() + ", or 0 for the default"}
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
	headerSets = enforce.HeaderSetNames()
)

// tierBounds and ruleBounds are the limits of the fields of a Tier and a
// Rule, by their JSON and YAML names ("match.path" for a field of Match,
// "limits.period" for one of each Limit of Limits).
var (
	tierBounds = map[string]Bound{
		"name":      {Pattern: enforce.NamePattern},
		"rate":      {Min: 1, Max: limiter.MaxLimit, Range: true, Required: true},
		"period":    {MinDur: limiter.MinPeriod, MaxDur: limiter.MaxPeriod, Required: true},
		"burst":     Between(0, limiter.MaxLimit),
		"algorithm": {Enum: algorithms},
		"align":     {Enum: aligns},
		"unlimited": {},
		"priority":  Between(0, enforce.MaxPriority),
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
		"limit":               Between(0, limiter.MaxLimit),
		"period":              {MinDur: limiter.MinPeriod, MaxDur: limiter.MaxPeriod},
		"burst":               Between(0, limiter.MaxLimit),
		"align":               {Enum: aligns},
		"limits":              {MaxItems: enforce.MaxLimits},
		"limits.limit":        {Min: 1, Max: limiter.MaxLimit, Range: true, Required: true},
		"limits.period":       {MinDur: limiter.MinPeriod, MaxDur: limiter.MaxPeriod, Required: true},
		"limits.burst":        Between(0, limiter.MaxLimit),
		"limits.algorithm":    {Enum: algorithms},
		"limits.align":        {Enum: aligns},
		"cost":                Between(0, limiter.MaxLimit),
		"hide_client_headers": {},
		"headers":             {Enum: headerSets},
		"mode":                {Enum: modes},
		"max_wait":            {MaxDur: enforce.MaxDelay},
		"fallback":            {Enum: fallbacks},
		"lease":               {},
		"lease.size":          {Min: 1, Max: MaxLeaseSize, Range: true, Required: true},
		"lease.ttl":           {MaxDur: MaxLeaseTTL},
		"lease.max_keys":      {Min: 0, Max: MaxLeaseKeys, Range: true},
	}
)

// TierBounds returns the limits of the fields of a Tier, by field name.
func TierBounds() map[string]Bound { return copyBounds(tierBounds) }

// RuleBounds returns the limits of the fields of a Rule, by field name
// ("match.path" for a field of Match, "limits.period" for one of each
// Limit).
func RuleBounds() map[string]Bound { return copyBounds(ruleBounds) }

// configBounds are the limits of the Config's own fields, by name.
var configBounds = map[string]Bound{"headers": {Enum: headerSets}}

// ConfigBounds returns the limits of the Config's own fields (not its
// tiers' or rules'), by name.
func ConfigBounds() map[string]Bound { return copyBounds(configBounds) }

// multiplierBound is a pinned multiplier's: (0, 1].
var multiplierBound = Bound{Min: 0, Max: 1, Range: true, ExclusiveMin: true, Msg: "want a number in (0, 1]"}

// MultiplierBound returns the limits of a pinned multiplier (CheckMultiplier).
func MultiplierBound() Bound { return multiplierBound }

func copyBounds(m map[string]Bound) map[string]Bound {
	out := make(map[string]Bound, len(m))
	for k, b := range m {
		b.Enum = append([]string(nil), b.Enum...)
		out[k] = b
	}
	return out
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
