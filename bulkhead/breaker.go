package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is returned, without running the call, by a breaker that is open or
// half-open with all its probes in flight. Callers map it to 503 (or to their
// fallback path) with a Retry-After from Breaker.RetryAfter.
var ErrOpen = errors.New("bulkhead: circuit breaker open")

// State is a breaker's state. Its numeric values are those of the
// throttled_breaker_state gauge.
type State int

// Breaker states.
const (
	StateClosed   State = 0 // calls pass; failures are counted
	StateHalfOpen State = 1 // a few probe calls pass; the rest get ErrOpen
	StateOpen     State = 2 // every call gets ErrOpen
)

// String returns closed, half_open or open.
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half_open"
	case StateOpen:
		return "open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

func stateOf(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	case gobreaker.StateOpen:
		return StateOpen
	}
	return StateClosed
}

// Outcomes reported to gobreaker: nil is a success.
var (
	errFailure  = errors.New("bulkhead: call failed")
	errExcluded = errors.New("bulkhead: caller gave up") // counts neither way
)

// Breaker is a circuit breaker (sony/gobreaker v2) around calls to one
// dependency: a store, or one upstream route. Safe for concurrent use.
//
// gobreaker v2.4.0 reads time.Now itself and takes no clock, so the open →
// half-open transition follows the real clock (OpenTimeout); Settings.Now is
// used only for RetryAfter.
type Breaker struct {
	name     string
	s        BreakerSettings
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	epoch    time.Time
	openedAt atomic.Int64 // since epoch (Settings.Now), when it last opened
	metrics  *Metrics
}

// NewBreaker returns a breaker named name (the metric label). m may be nil
// for no metrics; a name is attached to one Metrics at a time (see Close).
func NewBreaker(name string, s BreakerSettings, m *Metrics) (*Breaker, error) {
	if name == "" {
		return nil, errors.New("bulkhead: breaker name must not be empty")
	}
	s, err := s.normalize()
	if err != nil {
		return nil, fmt.Errorf("%w (breaker %q)", err, name)
	}
	b := &Breaker{name: name, s: s, epoch: s.Now()}
	trip := uint32(s.ConsecutiveFailures)
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          name,
		MaxRequests:   uint32(s.HalfOpenMaxRequests),
		Timeout:       s.OpenTimeout,
		ReadyToTrip:   func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= trip },
		OnStateChange: b.onStateChange,
		IsExcluded:    func(err error) bool { return err == errExcluded },
	})
	if m != nil {
		if err := m.attachBreaker(b); err != nil {
			return nil, err
		}
		b.metrics = m
	}
	return b, nil
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// State returns the current state (an expired open state reads half_open).
func (b *Breaker) State() State { return stateOf(b.cb.State()) }

// Call runs fn through the breaker under a Settings.Deadline timeout; see Exec.
func (b *Breaker) Call(ctx context.Context, fn func(context.Context) error) error {
	_, err := Exec(ctx, b, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// Exec runs fn through b and returns what fn returns, or ErrOpen at once when
// b refuses, or ctx.Err() when ctx has already ended.
//
// fn runs under context.WithTimeout(ctx, Settings.Deadline) and must honour
// it. It fails, for the breaker, when it is still running at the deadline
// (whatever it then returns) or returns an error that Settings.IsFailure
// accepts; a panic is a failure too. If ctx itself ended, the call counts
// neither way: the caller gave up, the dependency did nothing wrong.
func Exec[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (v T, err error) {
	if err := ctx.Err(); err != nil {
		return v, err
	}
	done, err := b.cb.Allow()
	if err != nil {
		return v, ErrOpen
	}
	cctx, cancel := context.WithTimeout(ctx, b.s.Deadline)
	defer cancel()
	reported := false
	defer func() {
		if !reported { // fn panicked
			done(errFailure)
		}
	}()
	v, err = fn(cctx)
	reported = true
	done(b.outcome(ctx, cctx, err))
	return v, err
}

func (b *Breaker) outcome(parent, call context.Context, err error) error {
	switch {
	case parent.Err() != nil:
		return errExcluded
	case call.Err() != nil: // only our deadline can have ended it
		return errFailure
	case err != nil && b.s.IsFailure(err):
		return errFailure
	}
	return nil
}

// RetryAfter suggests how long a refused caller should wait: the rest of the
// open period when open, Settings.Deadline (the probes' bound) when
// half-open, 0 when closed.
func (b *Breaker) RetryAfter() time.Duration {
	switch b.State() {
	case StateOpen:
		left := time.Duration(b.openedAt.Load()) + b.s.OpenTimeout - b.since()
		return max(left, 0)
	case StateHalfOpen:
		return b.s.Deadline
	}
	return 0
}

// Close detaches the breaker from its Metrics, so that its series goes away
// and its name may be used again there. The breaker itself keeps working.
func (b *Breaker) Close() {
	if b.metrics != nil {
		b.metrics.detachBreaker(b)
	}
}

// onStateChange runs under gobreaker's lock.
func (b *Breaker) onStateChange(_ string, from, to gobreaker.State) {
	if to == gobreaker.StateOpen {
		b.openedAt.Store(int64(b.since()))
	}
	if b.s.OnStateChange != nil {
		b.s.OnStateChange(b.name, stateOf(from), stateOf(to))
	}
}

func (b *Breaker) since() time.Duration { return b.s.Now().Sub(b.epoch) }
