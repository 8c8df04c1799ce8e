package bulkhead

import (
	"fmt"
	"math"
	"time"
)

// Defaults: a zero field in Settings or BreakerSettings takes these values.
// They are applied in one place, normalize below.
const (
	DefaultLimit         = 64
	DefaultMaxWait       = 100 * time.Millisecond
	DefaultMinRetryAfter = time.Second
	DefaultMaxRetryAfter = time.Minute

	DefaultConsecutiveFailures = 5
	DefaultOpenTimeout         = 5 * time.Second
	DefaultHalfOpenMaxRequests = 1
	DefaultDeadline            = 50 * time.Millisecond

	DefaultGateLimit    = 32
	DefaultGateMinLimit = 1
	DefaultGateMaxQueue = 128
	DefaultGateMaxWait  = 50 * time.Millisecond
)

// Settings configures a Bulkhead. The zero value is ready to use: every zero
// field takes the default named beside it. Negative values are errors.
type Settings struct {
	// Limit is the most permits held at once. Zero means DefaultLimit.
	// Resize changes it at run time.
	Limit int
	// MaxQueue is how many callers may wait for a permit while all are held.
	// Zero means no queue: a caller that finds the bulkhead full is refused
	// at once with ErrFull.
	MaxQueue int
	// MaxWait bounds how long a queued caller waits before it is refused
	// with ErrFull. Zero means DefaultMaxWait. Used only when MaxQueue > 0.
	MaxWait time.Duration
	// MinRetryAfter is the smallest suggestion RetryAfter makes. Zero means
	// DefaultMinRetryAfter.
	MinRetryAfter time.Duration
	// MaxRetryAfter is the largest suggestion RetryAfter makes. Zero means
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Now is the clock that times how long permits are held (the input of
	// RetryAfter). Nil means time.Now.
	Now func() time.Time
}

func (s Settings) normalize() (Settings, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Limit", int64(s.Limit)}, {"MaxQueue", int64(s.MaxQueue)}, {"MaxWait", int64(s.MaxWait)},
		{"MinRetryAfter", int64(s.MinRetryAfter)}, {"MaxRetryAfter", int64(s.MaxRetryAfter)},
	} {
		if f.v < 0 {
			return s, fmt.Errorf("bulkhead: Settings.%s must not be negative, got %d", f.name, f.v)
		}
	}
	if s.Limit == 0 {
		s.Limit = DefaultLimit
	}
	if s.MaxWait == 0 {
		s.MaxWait = DefaultMaxWait
	}
	if s.MinRetryAfter == 0 {
		s.MinRetryAfter = DefaultMinRetryAfter
	}
	if s.MaxRetryAfter == 0 {
		s.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.MinRetryAfter > s.MaxRetryAfter {
		return s, fmt.Errorf("bulkhead: Settings.MinRetryAfter (%v) exceeds Settings.MaxRetryAfter (%v)",
			s.MinRetryAfter, s.MaxRetryAfter)
	}
	return s, nil
}

// BreakerSettings configures a Breaker. The zero value is ready to use: every
// zero field takes the default named beside it. Negative values are errors.
type BreakerSettings struct {
	// ConsecutiveFailures is how many failures in a row trip the closed
	// breaker open. Zero means DefaultConsecutiveFailures.
	ConsecutiveFailures int
	// OpenTimeout is how long the breaker stays open (refusing every call
	// with ErrOpen) before it turns half-open. Zero means DefaultOpenTimeout.
	OpenTimeout time.Duration
	// HalfOpenMaxRequests is how many probe calls the half-open breaker lets
	// through; the rest get ErrOpen. When that many probes succeed in a row
	// the breaker closes; any failed probe opens it again. Zero means
	// DefaultHalfOpenMaxRequests.
	HalfOpenMaxRequests int
	// Deadline bounds each call: it runs under context.WithTimeout, and a
	// call still running at the deadline counts as a failure (even if it
	// then returns no error), so a slow dependency trips the breaker. For
	// RoundTripper it bounds the wait for the response headers. Zero means
	// DefaultDeadline (50 ms, sized for a store call; proxy routes want more).
	Deadline time.Duration
	// IsFailure says whether an error returned within the deadline counts
	// against the dependency. Nil means every non-nil error does. Timeouts
	// always count; a call whose caller's own context ended never counts.
	IsFailure func(error) bool
	// OnStateChange, if set, is told of every transition. It runs under the
	// breaker's lock: it must be quick and must not call the Breaker.
	OnStateChange func(name string, from, to State)
	// Now is the clock RetryAfter reads. Nil means time.Now. (gobreaker
	// v2.4.0 times the open state with the real clock; see breaker.go.)
	Now func() time.Time
}

func (s BreakerSettings) normalize() (BreakerSettings, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"ConsecutiveFailures", int64(s.ConsecutiveFailures)}, {"OpenTimeout", int64(s.OpenTimeout)},
		{"HalfOpenMaxRequests", int64(s.HalfOpenMaxRequests)}, {"Deadline", int64(s.Deadline)},
	} {
		if f.v < 0 {
			return s, fmt.Errorf("bulkhead: BreakerSettings.%s must not be negative, got %d", f.name, f.v)
		}
		if f.v > math.MaxUint32 && (f.name == "ConsecutiveFailures" || f.name == "HalfOpenMaxRequests") {
			return s, fmt.Errorf("bulkhead: BreakerSettings.%s must be at most %d, got %d", f.name, uint32(math.MaxUint32), f.v)
		}
	}
	if s.ConsecutiveFailures == 0 {
		s.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if s.OpenTimeout == 0 {
		s.OpenTimeout = DefaultOpenTimeout
	}
	if s.HalfOpenMaxRequests == 0 {
		s.HalfOpenMaxRequests = DefaultHalfOpenMaxRequests
	}
	if s.Deadline == 0 {
		s.Deadline = DefaultDeadline
	}
	if s.IsFailure == nil {
		s.IsFailure = func(err error) bool { return err != nil }
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s, nil
}

// GateSettings configures a Gate. The zero value is ready to use: every zero
// field takes the default named beside it. Negative values are errors.
type GateSettings struct {
	// Limit is the initial limit on calls in flight; the gate's controller
	// moves it with SetLimit. Zero means DefaultGateLimit, raised to MinLimit
	// if that is larger.
	Limit int
	// MinLimit is the lowest limit SetLimit sets. Zero means
	// DefaultGateMinLimit.
	MinLimit int
	// MaxQueue is how many callers may wait for a permit while the limit is
	// reached. The queue is what makes the gate priority-aware (a more
	// important newcomer takes the place of a less important waiter), so it
	// cannot be turned off. Zero means DefaultGateMaxQueue.
	MaxQueue int
	// MaxWait bounds how long a caller waits in the queue before it is shed
	// with ErrShed. Keep it short: the queue smooths bursts, it does not
	// absorb overload. Zero means DefaultGateMaxWait.
	MaxWait time.Duration
	// TopMaxWait bounds the wait of the most important callers (priority
	// 0) instead of MaxWait. They are refused only when nothing else is
	// left to refuse, so when they alone fill the upstream a short wait
	// sheds them at its capacity, where a longer one (still within the
	// latency target) loses nothing. Zero means MaxWait.
	TopMaxWait time.Duration
	// Now is the clock that times how long permits are held (the latency
	// samples of TakeWindow). Nil means time.Now.
	Now func() time.Time
}

func (s GateSettings) normalize() (GateSettings, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Limit", int64(s.Limit)}, {"MinLimit", int64(s.MinLimit)},
		{"MaxQueue", int64(s.MaxQueue)}, {"MaxWait", int64(s.MaxWait)},
		{"TopMaxWait", int64(s.TopMaxWait)},
	} {
		if f.v < 0 {
			return s, fmt.Errorf("bulkhead: GateSettings.%s must not be negative, got %d", f.name, f.v)
		}
	}
	if s.MinLimit == 0 {
		s.MinLimit = DefaultGateMinLimit
	}
	if s.Limit == 0 {
		s.Limit = max(DefaultGateLimit, s.MinLimit)
	}
	if s.MaxQueue == 0 {
		s.MaxQueue = DefaultGateMaxQueue
	}
	if s.MaxWait == 0 {
		s.MaxWait = DefaultGateMaxWait
	}
	if s.TopMaxWait == 0 {
		s.TopMaxWait = s.MaxWait
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Limit < s.MinLimit {
		return s, fmt.Errorf("bulkhead: GateSettings.Limit (%d) is below GateSettings.MinLimit (%d)", s.Limit, s.MinLimit)
	}
	return s, nil
}
