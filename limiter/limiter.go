package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/throttledhq/throttled/internal/enum"
)

// Store makes one atomic decision per call. Implementations are safe for
// concurrent use.
type Store interface {
	Decide(ctx context.Context, req Request) (Decision, error)
}

// KeyCopier is a Store that keeps no string of a Request once Decide has
// returned: what it keeps of a key it copies. Its callers may make keys in
// memory they write again after Decide returns (limiter/enforce makes them
// in pooled memory); a store that keeps a key as given (a batch that
// outlives a timed-out Decide, a lease table) must not implement it, nor
// may a wrapper unless what it wraps does.
type KeyCopier interface {
	Store
	CopiesKeys() bool
}

// Sentinel errors. Errors returned by stores wrap these where they apply.
var (
	// ErrInvalid reports a request or rule that cannot be decided.
	ErrInvalid = errors.New("limiter: invalid request")
)

// Algorithm selects how a rule counts. The zero value is TokenBucket.
type Algorithm uint8

// Algorithms.
const (
	TokenBucket Algorithm = iota
	GCRA
	FixedWindow
	SlidingWindowLog
	SlidingWindowCounter
	LeakyBucket
	// NumAlgorithms is the number of algorithms; arrays indexed by
	// Algorithm have this length.
	NumAlgorithms int = iota
)

var algNames = enum.New[Algorithm]("limiter", "algorithm", "token_bucket", "gcra", "fixed_window",
	"sliding_window_log", "sliding_window_counter", "leaky_bucket")

// algCodes are the short codes used in store keys.
var algCodes = [NumAlgorithms]string{"tb", "gc", "fw", "sl", "sc", "lb"}

// Algorithms lists every algorithm, in declaration order.
func Algorithms() []Algorithm {
	a := make([]Algorithm, NumAlgorithms)
	for i := range a {
		a[i] = Algorithm(i)
	}
	return a
}

func (a Algorithm) String() string { return algNames.String(a) }

// Code is the algorithm's short code in store keys ("tb" for TokenBucket),
// so that a rule that changes algorithm never reads another's state.
func (a Algorithm) Code() string {
	if int(a) < NumAlgorithms {
		return algCodes[a]
	}
	return "xx"
}

// AlgorithmNames lists the algorithms' names in declaration order, the
// first the default.
func AlgorithmNames() []string { return algNames.Names() }

// ParseAlgorithm reads an algorithm name as printed by String. The empty
// string means TokenBucket.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "" {
		return TokenBucket, nil
	}
	return algNames.Parse(s)
}

// IsWindow reports whether a counts requests in windows (and ignores Burst).
func (a Algorithm) IsWindow() bool {
	return a == FixedWindow || a == SlidingWindowLog || a == SlidingWindowCounter
}

// Rule says how much a key may spend.
type Rule struct {
	Name      string    // for metrics and headers; not part of the state key
	Algorithm Algorithm // zero value: TokenBucket
	Limit     int64     // tokens per Period, > 0
	Period    time.Duration
	Burst     int64 // bucket capacity; 0 means Limit. Ignored by window algorithms.
	// Align says where FixedWindow windows start: at multiples of Period
	// (the zero value) or on the UTC calendar (see AlignCalendar).
	Align Align
	// Fallback says how to decide when the shared store fails. Stores
	// ignore it; the Fallback store applies it.
	Fallback FallbackPolicy
}

// FallbackPolicy says how a rule decides while the shared store is failing.
// The zero value is FallbackLocal.
type FallbackPolicy uint8

// Fallback policies.
const (
	FallbackLocal FallbackPolicy = iota // in-memory limiter with this instance's share of the quota
	FallbackAllow                       // fail open
	FallbackDeny                        // fail closed
)

var fallbackNames = enum.New[FallbackPolicy]("limiter", "fallback policy", "local", "allow", "deny")

func (f FallbackPolicy) String() string { return fallbackNames.String(f) }

// FallbackPolicyNames lists the fallback policies' names, the first the
// default.
func FallbackPolicyNames() []string { return fallbackNames.Names() }

// ParseFallbackPolicy reads a policy name; "" means local.
func ParseFallbackPolicy(s string) (FallbackPolicy, error) {
	if s == "" {
		return FallbackLocal, nil
	}
	return fallbackNames.Parse(s)
}

// Capacity is the most one key can spend at once.
func (r Rule) Capacity() int64 {
	if r.Algorithm.IsWindow() || r.Burst == 0 {
		return r.Limit
	}
	return r.Burst
}

// Bounds of a Rule, as Validate applies them: Limit in 1..MaxLimit, Burst
// in 0..MaxLimit, Period in MinPeriod..MaxPeriod.
const (
	MaxLimit  = 1_000_000_000_000
	MinPeriod = time.Millisecond
	MaxPeriod = 366 * 24 * time.Hour
)

// MaxWait is the longest ResetAfter or RetryAfter a Decision reports:
// 9e15 µs, about 285 years, just below the largest Duration (about 292
// years) and exact as a float64. Validate refuses a rule whose burst takes
// longer than that to refill; a RetryAfter longer than that (a tiny
// multiplier on a slow rule) is reported as MaxWait.
const MaxWait = maxMicros * time.Microsecond

const maxMicros = 9e15

// MinMultiplier is the smallest multiplier a store applies: a request's
// smaller positive multiplier counts as MinMultiplier, so that the
// admission limit's intervals stay finite.
const MinMultiplier = 1e-6

// MaxLogLimit is the largest Limit a SlidingWindowLog rule may have: the log
// keeps one entry per request, so each call costs O(Limit) in Redis and
// memory per key.
const MaxLogLimit = 10_000

// Validate reports what is wrong with r, naming the field.
func (r Rule) Validate() error {
	switch {
	case int(r.Algorithm) >= NumAlgorithms:
		return fmt.Errorf("%w: rule %q: algorithm %d unknown", ErrInvalid, r.Name, r.Algorithm)
	case r.Limit <= 0 || r.Limit > MaxLimit:
		return fmt.Errorf("%w: rule %q: limit %d must be in 1..1e12", ErrInvalid, r.Name, r.Limit)
	case r.Period < MinPeriod || r.Period > MaxPeriod:
		return fmt.Errorf("%w: rule %q: period %v must be in 1ms..366d", ErrInvalid, r.Name, r.Period)
	case !fallbackNames.Valid(r.Fallback):
		return fmt.Errorf("%w: rule %q: fallback policy %d unknown", ErrInvalid, r.Name, r.Fallback)
	case r.Burst < 0 || r.Burst > MaxLimit:
		return fmt.Errorf("%w: rule %q: burst %d must be in 0..1e12", ErrInvalid, r.Name, r.Burst)
	case !r.Algorithm.IsWindow() && float64(r.Capacity())*float64(r.Period)/float64(r.Limit) > float64(MaxWait):
		return fmt.Errorf("%w: rule %q: burst %d refills in %.0f years at limit %d per %v, longer than MaxWait (%.0f years)",
			ErrInvalid, r.Name, r.Capacity(), float64(r.Capacity())*r.Period.Hours()/float64(r.Limit)/(24*365.25),
			r.Limit, r.Period, MaxWait.Hours()/(24*365.25))
	case r.validateAlign() != "":
		return fmt.Errorf("%w: rule %q: %s", ErrInvalid, r.Name, r.validateAlign())
	case r.Algorithm == SlidingWindowLog && r.Limit > MaxLogLimit:
		return fmt.Errorf("%w: rule %q: limit %d exceeds %d, the most sliding_window_log keeps per key "+
			"(one entry per request; use sliding_window_counter)", ErrInvalid, r.Name, r.Limit, MaxLogLimit)
	}
	return nil
}

// Request is one decision to make.
type Request struct {
	Key  string // the client key, e.g. "per-ip:192.0.2.1"; must not be empty
	Rule Rule
	Cost int64 // tokens this request spends; 0 means 1
	// Multiplier scales the admission limit (see the package doc): 1 when
	// healthy, in (0, ∞). 0 means 1; below MinMultiplier means MinMultiplier.
	Multiplier float64
	Tier       string // for metrics only
	// Refund gives Cost back to the key instead of spending it: used when a
	// later rule refuses a request that earlier rules admitted.
	Refund bool
	// Peek reads the key's state (Remaining, ResetAfter) at now without
	// spending anything; Cost is ignored.
	Peek bool
}

// Normalize fills defaults and validates r. Stores call it first.
func (r *Request) Normalize() error {
	if err := r.normalize(); err != nil {
		return err
	}
	if err := r.Rule.Validate(); err != nil {
		return err
	}
	return r.fits()
}

// normalize is Normalize but for its rule's validation and the cost's fit
// in the rule's capacity.
func (r *Request) normalize() error {
	if r.Peek { // a refund of nothing: refill to now, spend nothing
		r.Cost, r.Refund = 0, true
	} else if r.Cost == 0 {
		r.Cost = 1
	}
	if r.Multiplier == 0 {
		r.Multiplier = 1
	} else if r.Multiplier > 0 && r.Multiplier < MinMultiplier {
		r.Multiplier = MinMultiplier
	}
	switch {
	case r.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case r.Cost < 0:
		return fmt.Errorf("%w: cost %d is negative", ErrInvalid, r.Cost)
	case math.IsNaN(r.Multiplier) || math.IsInf(r.Multiplier, 0) || r.Multiplier < 0:
		return fmt.Errorf("%w: multiplier %v must be a finite number > 0", ErrInvalid, r.Multiplier)
	}
	return nil
}

// fits reports a cost beyond the rule's capacity.
func (r *Request) fits() error {
	if c := r.Rule.Capacity(); r.Cost > c {
		return fmt.Errorf("%w: rule %q: cost %d exceeds capacity %d", ErrInvalid, r.Rule.Name, r.Cost, c)
	}
	return nil
}

// Reason says why a decision went the way it did.
type Reason uint8

// Reasons.
const (
	Allowed   Reason = iota // admitted
	OverQuota               // the key's quota is spent: HTTP 429
	Shed                    // quota fine, admission limit spent under load: HTTP 503
	// NumReasons is the number of reasons.
	NumReasons int = iota
)

var reasonNames = enum.New[Reason]("limiter", "reason", "allowed", "over_quota", "shed")

func (r Reason) String() string { return reasonNames.String(r) }

// Decision is the answer for one request.
type Decision struct {
	Allowed    bool
	Reason     Reason
	Limit      int64         // the rule's Limit per Period
	Remaining  int64         // what the key may still spend now (≥ 0)
	ResetAfter time.Duration // until the quota is whole again; at most MaxWait
	RetryAfter time.Duration // until this request would pass; 0 when allowed; at most MaxWait
	Fallback   bool          // decided by a fallback path, not the shared store
}

// DecisionLabels are the values a Decision's Label takes, in order: the
// reasons, then the reasons prefixed by "fallback_".
var DecisionLabels = [2 * NumReasons]string{"allowed", "over_quota", "shed",
	"fallback_allowed", "fallback_over_quota", "fallback_shed"}

// Label names the decision in metrics and traces: its reason, prefixed by
// "fallback_" when it came from the fallback path.
func (d Decision) Label() string {
	i := int(d.Reason)
	if d.Fallback {
		i += NumReasons
	}
	return DecisionLabels[i]
}
