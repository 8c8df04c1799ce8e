package enforce

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/throttledhq/throttled/internal/enum"
	"github.com/throttledhq/throttled/limiter"
)

// Tier is what enforcement needs of a tier: its quota and priority (0 is
// the highest priority). The configured tier is policy.Tier; its control
// parameters are controller.Tier; cmd/throttled derives both views from it.
//
// An Unlimited tier's clients are never refused by a rule (neither 429 nor
// 503): their requests are still decided and counted against the tier's
// quota, as in ModeShadow, so headers and metrics show their usage. The
// tier admission cap and the concurrency limit, which protect the
// upstream, still apply.
type Tier struct {
	Name      string
	Algorithm limiter.Algorithm
	Limit     int64
	Period    time.Duration
	Burst     int64
	Align     limiter.Align // FixedWindow: limiter.AlignCalendar for UTC minutes, hours, days, months
	Priority  int
	Unlimited bool
}

// Limit is one of a rule's own limits (see Rule.Limits).
type Limit struct {
	Algorithm limiter.Algorithm
	Limit     int64
	Period    time.Duration
	Burst     int64
	Align     limiter.Align
}

// MaxLimits bounds a rule's Limits.
const MaxLimits = 8

// Mode says what a rule does with a refusal.
type Mode uint8

// Modes.
const (
	ModeEnforce Mode = iota // refuse at once (the default)
	ModeShadow              // decide, record and add headers, but never refuse
	ModeDelay               // wait up to MaxWait for capacity, then refuse
)

var modeNames = enum.New[Mode]("enforce", "mode", "enforce", "shadow", "delay")

func (m Mode) String() string { return modeNames.String(m) }

// ModeNames lists the modes' names, the first the default.
func ModeNames() []string { return modeNames.Names() }

// ParseMode reads a mode name; "" means enforce.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeEnforce, nil
	}
	return modeNames.Parse(s)
}

// Rule limits the requests it matches, per key.
//
// Path is a pattern matched by segments, as a prefix: "/" matches every
// path, "/api" matches "/api" and "/api/x" but not "/apix", a ":name"
// segment matches any one segment and a final "*" anything below. Methods
// empty means every method.
//
// Keys names the key sources whose values, joined, make the bucket key:
// "ip" (the client IP, IPv6 grouped by prefix), "api_key" (the configured
// API-key header, when believed: see UnassignedKeys), "jwt" (the verified
// JWT subject), "client" (API key, else JWT subject, else the IP: an
// anonymous client is its IP), "header:NAME" (any request header, as sent)
// and "route" (the rule's path pattern: one bucket for the whole endpoint).
// A rule whose key source is absent from a request (say, no API key) does
// not apply to it.
//
// With Limit 0 and no Limits the rule uses the quota of the client's tier;
// with Limit set it has its own (Algorithm, Limit, Period, Burst, Align);
// with Limits it has several, all of which must pass (say 10 per second and
// 10,000 per calendar day). Either way the tier's multiplier applies.
//
// Limits are decided in order, each in its own bucket, and a refusal for
// quota by one gives back what the earlier ones took, as between rules (see the package
// doc for the bounds): a request refused by the daily limit spends nothing
// of the per-second one. The first limit's bucket key is the rule's; limit
// i (from 0) adds "#<i+1>" to it and to the rule name in metrics.
//
// HideHeaders withholds the rule's decisions from the X-RateLimit-* and
// RateLimit* headers: the headers report the most restrictive rule that
// does not hide them, and none when every rule that applied hides them. A
// refusal by a hiding rule still carries Retry-After.
type Rule struct {
	Name      string
	Methods   []string
	Path      string
	Keys      []string
	Algorithm limiter.Algorithm
	Limit     int64
	Period    time.Duration
	Burst     int64
	Align     limiter.Align
	Limits    []Limit // instead of Algorithm, Limit, Period, Burst and Align: several limits
	Cost      int64   // tokens per request; 0 means 1
	Mode      Mode
	MaxWait   time.Duration // ModeDelay: longest wait for capacity
	Fallback  limiter.FallbackPolicy
	// HideHeaders: no X-RateLimit-*/RateLimit* headers for this rule.
	HideHeaders bool
	// Headers is the set of rate-limit headers the rule's decisions write
	// (the zero value, HeadersBoth: all five). HeadersNone hides them as
	// HideHeaders does. policy.Compile resolves a configuration's
	// top-level headers, which a rule's own overrides, into it.
	Headers HeaderSet
}

// HeaderSet is a set of rate-limit headers a rule writes. A refusal
// carries Retry-After whatever the set.
type HeaderSet uint8

// Header sets.
const (
	HeadersBoth   HeaderSet = iota // X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy and RateLimit (the default)
	HeadersIETF                    // RateLimit-Policy and RateLimit (the IETF draft's)
	HeadersLegacy                  // X-RateLimit-Limit, -Remaining and -Reset
	HeadersNone                    // none: as HideHeaders
)

var headerSetNames = enum.New[HeaderSet]("enforce", "headers", "both", "ietf", "legacy", "none")

func (s HeaderSet) String() string { return headerSetNames.String(s) }

// HeaderSetNames lists the header sets' names, the first the default.
func HeaderSetNames() []string { return headerSetNames.Names() }

// ParseHeaderSet reads a header set's name; "" means HeadersBoth.
func ParseHeaderSet(s string) (HeaderSet, error) {
	if s == "" {
		return HeadersBoth, nil
	}
	return headerSetNames.Parse(s)
}

// Policy is the whole enforcement configuration. Rules apply in order; a
// request must pass every rule that matches it.
type Policy struct {
	Tiers         []Tier
	Rules         []Rule
	DefaultTier   string // for believed clients without an assignment; "" = the lowest-priority tier
	AnonymousTier string // for requests without a believed client key; "" = DefaultTier
	// UnmatchedTier is the tier of requests that match no rule, for the
	// stages after the decision (the inner loop's gate takes them at its
	// priority, its bulkhead holds them); "" = the lowest-priority tier.
	UnmatchedTier string
}

// Patterns of a Policy, as regular expressions: Validate applies them, and
// policy documents and their schemas read them from here.
const (
	// NamePattern is a tier's or a rule's name.
	NamePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
	// MethodPattern is an HTTP method in Rule.Methods.
	MethodPattern = `^[A-Z]{1,16}$`
	// HeaderNamePattern is a header name (an HTTP token) in a "header:NAME"
	// key source; unanchored, as KeySourcePattern embeds it.
	HeaderNamePattern = "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}"
	// KeySourcePattern is one of Rule.Keys.
	KeySourcePattern = `^(ip|api_key|jwt|client|route|header:` + HeaderNamePattern + `)$`
)

// Bounds of a Policy that Validate applies.
const (
	MaxPriority = 1000        // Tier.Priority is in 0..MaxPriority
	MaxDelay    = time.Minute // the longest Rule.MaxWait of ModeDelay
)

var (
	nameRE      = regexp.MustCompile(NamePattern)
	methodRE    = regexp.MustCompile(MethodPattern)
	keySourceRE = regexp.MustCompile(KeySourcePattern)
)

// ErrPolicy reports an invalid policy; errors name the field.
var ErrPolicy = errors.New("enforce: invalid policy")

// Validate reports every problem in p, each naming its field.
func (p *Policy) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrPolicy}, a...)...))
	}
	if len(p.Tiers) == 0 {
		bad("tiers: at least one tier is needed")
	}
	seen := map[string]bool{}
	for i, t := range p.Tiers {
		if !nameRE.MatchString(t.Name) {
			bad("tiers[%d].name %q: want 1-64 of [A-Za-z0-9_.-]", i, t.Name)
		} else if seen[t.Name] {
			bad("tiers[%d].name %q: duplicate", i, t.Name)
		}
		seen[t.Name] = true
		r := limiter.Rule{Name: t.Name, Algorithm: t.Algorithm, Limit: t.Limit, Period: t.Period, Burst: t.Burst, Align: t.Align}
		if err := r.Validate(); err != nil {
			bad("tiers[%d] (%s): %v", i, t.Name, unwrapInvalid(err))
		}
		if t.Priority < 0 || t.Priority > MaxPriority {
			bad("tiers[%d].priority %d: want 0..%d", i, t.Priority, MaxPriority)
		}
	}
	for _, f := range []struct{ field, name string }{{"default_tier", p.DefaultTier}, {"anonymous_tier", p.AnonymousTier},
		{"unmatched_tier", p.UnmatchedTier}} {
		if f.name != "" && !seen[f.name] {
			bad("%s %q: no such tier", f.field, f.name)
		}
	}
	rules := map[string]bool{}
	for i := range p.Rules {
		if err := p.Rules[i].validate(i, p.Tiers); err != nil {
			errs = append(errs, err)
		}
		if rules[p.Rules[i].Name] {
			bad("rules[%d].name %q: duplicate", i, p.Rules[i].Name)
		}
		rules[p.Rules[i].Name] = true
	}
	return errors.Join(errs...)
}

func unwrapInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), limiter.ErrInvalid.Error()+": ")
}

func (r *Rule) validate(i int, tiers []Tier) error {
	f := func(format string, a ...any) error {
		return fmt.Errorf("%w: rules[%d] (%s): "+format, append([]any{ErrPolicy, i, r.Name}, a...)...)
	}
	switch {
	case !nameRE.MatchString(r.Name):
		return f("name %q: want 1-64 of [A-Za-z0-9_.-]", r.Name)
	case !strings.HasPrefix(r.Path, "/"):
		return f("match.path %q: must start with /", r.Path)
	case len(r.Keys) == 0:
		return f("key: at least one key source is needed")
	case !modeNames.Valid(r.Mode):
		return f("mode %d: unknown", r.Mode)
	case !headerSetNames.Valid(r.Headers):
		return f("headers %d: unknown", r.Headers)
	case r.Mode == ModeDelay && (r.MaxWait <= 0 || r.MaxWait > MaxDelay):
		return f("max_wait %v: delay mode needs 0 < max_wait ≤ %v", r.MaxWait, MaxDelay)
	case r.Cost < 0:
		return f("cost %d: must be ≥ 1", r.Cost)
	}
	for _, m := range r.Methods {
		if !methodRE.MatchString(m) {
			return f("match.methods: %q is not an upper-case HTTP method", m)
		}
	}
	for _, k := range r.Keys {
		if err := validKeySource(k); err != nil {
			return f("key: %v", err)
		}
	}
	if len(r.Limits) > 0 {
		return r.validateLimits(f)
	}
	if r.Limit != 0 {
		lr := limiter.Rule{Name: r.Name, Algorithm: r.Algorithm, Limit: r.Limit, Period: r.Period, Burst: r.Burst,
			Align: r.Align, Fallback: r.Fallback}
		if err := lr.Validate(); err != nil {
			return f("%s", unwrapInvalid(err))
		}
		if c := max(r.Cost, 1); c > lr.Capacity() {
			return f("cost %d exceeds the rule's capacity %d", c, lr.Capacity())
		}
		return nil
	}
	for _, t := range tiers {
		tr := limiter.Rule{Algorithm: t.Algorithm, Limit: t.Limit, Period: t.Period, Burst: t.Burst, Align: t.Align}
		if c := max(r.Cost, 1); t.Limit > 0 && c > tr.Capacity() {
			return f("cost %d exceeds the capacity %d of tier %s", c, tr.Capacity(), t.Name)
		}
	}
	return nil
}

// validateLimits checks a rule with several limits.
func (r *Rule) validateLimits(f func(string, ...any) error) error {
	switch {
	case r.Limit != 0 || r.Period != 0 || r.Burst != 0 || r.Algorithm != 0 || r.Align != 0:
		return f("limits: set limits or limit (with algorithm, period, burst, align), not both")
	case len(r.Limits) > MaxLimits:
		return f("limits: %d limits, at most %d", len(r.Limits), MaxLimits)
	}
	for j, l := range r.Limits {
		lr := limiter.Rule{Name: r.Name, Algorithm: l.Algorithm, Limit: l.Limit, Period: l.Period, Burst: l.Burst, Align: l.Align}
		if err := lr.Validate(); err != nil {
			return f("limits[%d]: %s", j, unwrapInvalid(err))
		}
		if c := max(r.Cost, 1); c > lr.Capacity() {
			return f("limits[%d]: cost %d exceeds the limit's capacity %d", j, c, lr.Capacity())
		}
	}
	return nil
}

func validKeySource(k string) error {
	if keySourceRE.MatchString(k) {
		return nil
	}
	return fmt.Errorf("unknown key source %q (want ip, api_key, jwt, client, route or header:NAME)", k)
}

// TierLookup finds the tier assigned to a client key.
type TierLookup interface {
	TierOf(client string) (tier string, ok bool)
}

// UnassignedKeys says what an API key without a tier assignment is.
type UnassignedKeys uint8

// What unassigned keys are.
const (
	// UnassignedAnonymous (the default): a key that has no assignment and
	// that no identity.KeyVerifier accepted is not believed. The request is
	// anonymous: its client is its IP (grouped as identity groups IPs), of
	// the anonymous tier, and api_key rules do not apply to it. So random
	// keys are not a way out of per-client limits.
	UnassignedAnonymous UnassignedKeys = iota
	// UnassignedDefaultTier believes every key as presented: a key without
	// an assignment is a client of its own in the default tier. Only for
	// deployments that verify keys before throttled sees them.
	UnassignedDefaultTier
)

var unassignedNames = enum.New[UnassignedKeys]("enforce", "unassigned keys", "anonymous", "default_tier")

func (u UnassignedKeys) String() string { return unassignedNames.String(u) }

// ParseUnassignedKeys reads a name as printed by String; "" means
// UnassignedAnonymous.
func ParseUnassignedKeys(s string) (UnassignedKeys, error) {
	if s == "" {
		return UnassignedAnonymous, nil
	}
	return unassignedNames.Parse(s)
}
