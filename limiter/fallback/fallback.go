package fallback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter"
)

// ErrBadConfig reports settings that cannot work; the message names them.
var ErrBadConfig = errors.New("fallback: bad configuration")

// Defaults of Settings, applied in one place (normalize below).
const (
	// DefaultDeadline bounds a shared decision when no Guard is set.
	DefaultDeadline = 50 * time.Millisecond
	// DefaultDenyRetryAfter is the Retry-After of a FallbackDeny refusal.
	DefaultDenyRetryAfter = time.Second
	// DefaultMaxDetached bounds the shared calls running on past their
	// decision's deadline (see Settings.CallTimeout).
	DefaultMaxDetached = 64
)

// ErrBusy is the error of a shared decision not tried because
// Settings.MaxDetached calls are still running on past their deadline: the
// shared store is that slow, and the request falls back.
var ErrBusy = errors.New("fallback: too many slow shared calls in flight")

// Guard runs calls to the shared store, typically a circuit breaker with a
// per-call deadline; *bulkhead.Breaker satisfies it. Call may refuse without
// running fn (an open breaker); otherwise it runs fn under a context with a
// deadline and returns what fn returns. Call must return only after fn has
// returned, and must not keep fn.
type Guard interface {
	Call(ctx context.Context, fn func(context.Context) error) error
}

// InstanceCounter reports how many instances share the quota now; *Heartbeat
// satisfies it. A count below 1 is taken as 1.
type InstanceCounter interface {
	Instances() int
}

// Settings configures a Store. The zero value is ready to use:
// no guard (a plain DefaultDeadline), one instance, no metrics.
type Settings struct {
	// Guard runs every shared decision and owns its deadline. Production
	// wants a circuit breaker here, so that a failing store is not tried
	// on every request. Nil means each decision is tried under Deadline.
	Guard Guard
	// Deadline bounds each shared decision when Guard is nil. Zero means
	// DefaultDeadline. Setting it with a Guard is an error: the
	// Guard owns the deadline.
	Deadline time.Duration
	// Instances is a fixed count of instances sharing the quota, for the
	// local policy. Zero means 1, or Counter when set (not both).
	Instances int
	// Counter gives the live instance count (e.g. a Heartbeat).
	Counter InstanceCounter
	// DenyRetryAfter is the Retry-After of FallbackDeny refusals. Zero means
	// DefaultDenyRetryAfter.
	DenyRetryAfter time.Duration
	// Local is the in-memory store of the local policy. Nil means a new
	// Memory on Now.
	Local *limiter.Memory
	// Now is the clock of the default Local store. Nil means time.Now.
	Now func() time.Time
	// Errors, if set, counts each failed shared decision (an
	// *instrument.Metrics does).
	Errors ErrorCounter
	// CallTimeout, when set, detaches shared calls from the decision's
	// deadline: the decision still waits only until the deadline (the
	// Guard's or Deadline) and then falls back, but the call runs on, up
	// to CallTimeout, and so finishes and returns its connection to the
	// pool. go-redis closes a connection whose read a deadline cuts, so
	// without it a store slower than the deadline makes every decision
	// reconnect. It must exceed the deadline. Zero means calls end at the
	// deadline.
	CallTimeout time.Duration
	// Logger gets one line when an episode of fallback decisions starts
	// (WARN, with the cause) and one when it ends (INFO, with its length
	// and the count of fallback decisions in it). Nil: no log.
	Logger *slog.Logger
	// MaxDetached bounds the calls running past their deadline at once;
	// beyond it a decision falls back without calling (ErrBusy). Calls
	// still within their deadline do not count (those in flight when the
	// bound is reached may still outlive theirs). Zero means
	// DefaultMaxDetached. Used only with CallTimeout.
	MaxDetached int
	// Reserve is the least time kept, of a caller whose context has a
	// deadline, for deciding locally and answering: the decision waits for
	// the shared store until the deadline less max(Reserve, half the time
	// left), then falls back (see Store). Zero keeps half: enough for a
	// healthy store (well under a millisecond) at Envoy's 20 ms, and room
	// for the answer on a busy host.
	Reserve time.Duration
}

func (s Settings) normalize() (Settings, error) {
	switch {
	case s.Deadline < 0:
		return s, fmt.Errorf("%w: Settings.Deadline %v must not be negative", ErrBadConfig, s.Deadline)
	case s.Deadline > 0 && s.Guard != nil:
		return s, fmt.Errorf("%w: Settings.Deadline is set with a Guard, which owns the deadline", ErrBadConfig)
	case s.Instances < 0:
		return s, fmt.Errorf("%w: Settings.Instances %d must not be negative", ErrBadConfig, s.Instances)
	case s.Instances > 0 && s.Counter != nil:
		return s, fmt.Errorf("%w: Settings: set Instances or Counter, not both", ErrBadConfig)
	case s.DenyRetryAfter < 0:
		return s, fmt.Errorf("%w: Settings.DenyRetryAfter %v must not be negative", ErrBadConfig, s.DenyRetryAfter)
	case s.Reserve < 0:
		return s, fmt.Errorf("%w: Settings.Reserve %v must not be negative", ErrBadConfig, s.Reserve)
	case s.CallTimeout < 0 || s.MaxDetached < 0:
		return s, fmt.Errorf("%w: Settings.CallTimeout %v and MaxDetached %d must not be negative",
			ErrBadConfig, s.CallTimeout, s.MaxDetached)
	case s.CallTimeout > 0 && s.Guard == nil && s.Deadline >= s.CallTimeout:
		return s, fmt.Errorf("%w: Settings.CallTimeout %v must exceed Deadline %v", ErrBadConfig, s.CallTimeout, s.Deadline)
	}
	if s.MaxDetached == 0 {
		s.MaxDetached = DefaultMaxDetached
	}
	if s.Deadline == 0 {
		s.Deadline = DefaultDeadline
	}
	if s.Instances == 0 {
		s.Instances = 1
	}
	if s.DenyRetryAfter == 0 {
		s.DenyRetryAfter = DefaultDenyRetryAfter
	}
	if s.Local == nil && s.Now == nil {
		s.Local = limiter.NewMemory() // its own monotonic clock
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Local == nil {
		s.Local = limiter.NewMemory(limiter.WithClock(s.Now))
	}
	return s, nil
}

// Store is a Store that asks the shared store (Redis) through a Guard and,
// when the guard refuses or the call fails or times out, decides by the
// rule's FallbackPolicy instead:
//
//   - FallbackLocal: the in-memory store with this instance's share of the
//     quota (see LocalRule); Limit and Remaining then report that share;
//   - FallbackAllow: admit (fail open), reporting Remaining as if the
//     bucket were full: nothing is counted;
//   - FallbackDeny: refuse with Reason Shed (503) and Retry-After
//     DenyRetryAfter. Shed, not OverQuota: the client did nothing wrong, we
//     cannot count for a moment, and 429 would tell it to slow down.
//
// Every fallback decision has Decision.Fallback set. Invalid requests are
// returned as errors (wrapping ErrInvalid) and never reach the guard.
//
// A decision answers within its caller's deadline: it waits for the shared
// store until that deadline less max(Settings.Reserve, half the time left),
// then decides locally (ErrCallerDeadline is the episode's cause); with
// less than MinSharedWait to wait it decides locally at once, without
// asking. A shared call given up so is not cut: it runs on, and the guard
// judges it against the store's own deadline, so that a stalled store
// opens the breaker whatever its callers' deadlines, and one that answers
// in time counts as healthy. While a fallback episode runs (FallbackActive)
// a decision under a deadline, with a Guard, asks the shared store without
// waiting for it: the
// guard still sees every call, and the first answer ends the episode; so a
// request of several rules waits for a failing store once, not per rule.
// When the caller's context ends first (it went
// away), Decide returns its error: nobody waits for the answer. When the
// shared store works again (for a breaker: once it half-opens and a probe
// succeeds) shared decisions resume by themselves.
type Store struct {
	shared   limiter.Store
	s        Settings
	active   atomic.Bool
	ep       episode      // of active: its transitions, logged
	calls    sync.Pool    // *sharedCall
	detached atomic.Int64 // calls running past their deadline (CallTimeout)
}

// New returns a Store around shared. If reg is not nil it
// registers the gauge throttled_fallback_active (1 while FallbackActive).
//
// The shared store must honour its context's deadline, or nothing bounds a
// decision on a Redis that accepts connections and never answers: a *Redis
// on a go-redis client without ContextTimeoutEnabled is refused.
func New(shared limiter.Store, s Settings, reg prometheus.Registerer) (*Store, error) {
	if shared == nil {
		return nil, fmt.Errorf("%w: New: shared store is nil", ErrBadConfig)
	}
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	if err := honoursDeadlines(shared); err != nil {
		return nil, err
	}
	f := &Store{shared: shared, s: s}
	f.ep = episode{log: s.Logger, now: time.Now, active: &f.active}
	f.calls.New = func() any { c := &sharedCall{f: f}; c.run = c.decide; return c }
	if reg != nil {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "throttled_fallback_active",
			Help: "1 while decisions come from the fallback path (the shared store failed or its breaker is open), else 0.",
		}, func() float64 {
			if f.active.Load() {
				return 1
			}
			return 0
		})
		if err := reg.Register(g); err != nil {
			return nil, fmt.Errorf("fallback: register throttled_fallback_active: %w", err)
		}
	}
	return f, nil
}

// ErrorCounter counts failed decisions of the shared store.
type ErrorCounter interface{ CountError(err error) }

// deadlineChecker is a store that can tell whether it honours context
// deadlines (the Redis store: its go-redis client must enable them).
type deadlineChecker interface{ HonoursDeadlines() error }

// honoursDeadlines refuses a shared store that ignores context deadlines:
// a stalled Redis would hold every decision for the client's ReadTimeout,
// whatever the Guard's deadline says. Other stores are trusted to honour
// their context.
func honoursDeadlines(s limiter.Store) error {
	if d, ok := s.(deadlineChecker); ok {
		if err := d.HonoursDeadlines(); err != nil {
			return fmt.Errorf("%w: New: %w", ErrBadConfig, err)
		}
	}
	return nil
}

// FallbackActive reports whether the last shared decision failed or was
// refused by the guard, that is whether decisions come from the fallback.
func (f *Store) FallbackActive() bool { return f.active.Load() }

// Instances is the instance count the local policy divides the quota by.
func (f *Store) Instances() int {
	n := f.s.Instances
	if f.s.Counter != nil {
		n = f.s.Counter.Instances()
	}
	return max(n, 1)
}

// Decide asks the shared store and falls back as the type doc says.
func (f *Store) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if err := req.Normalize(); err != nil {
		return limiter.Decision{}, err
	}
	wait, bounded := f.sharedWait(ctx)
	if bounded && wait < MinSharedWait && ctx.Err() == nil {
		return f.decideLocally(ctx, req) // no time to ask: not the store's failure
	}
	if bounded && f.s.Guard != nil && f.active.Load() {
		wait = 0 // failing: ask (for the guard to see) without waiting
	}
	var d limiter.Decision
	var ran bool
	var err error
	if bounded {
		d, ran, err = f.sharedDecideBy(ctx, req, wait)
	} else {
		d, ran, err = f.sharedDecide(ctx, req)
	}
	switch {
	case err == nil:
		f.ep.answered()
		return d, nil
	case errors.Is(err, limiter.ErrInvalid):
		return limiter.Decision{}, err
	case errors.Is(ctx.Err(), context.Canceled): // the caller is gone: no one to answer
		return limiter.Decision{}, fmt.Errorf("fallback: fallback: %w", ctx.Err())
	}
	// A caller whose deadline passed meanwhile (woken late on a busy host)
	// still gets the fallback's answer, made in microseconds.
	if ran && f.s.Errors != nil {
		f.s.Errors.CountError(err)
	}
	f.ep.fellBack(err)
	return f.decideLocally(ctx, req)
}

// sharedDecide runs one shared decision through the guard (or under the
// deadline), for a caller without a deadline. ran reports whether the
// shared store was called at all.
func (f *Store) sharedDecide(ctx context.Context, req limiter.Request) (d limiter.Decision, ran bool, err error) {
	if f.s.Guard == nil {
		cctx, cancel := context.WithTimeout(ctx, f.s.Deadline)
		defer cancel()
		err = f.call(cctx, req, &d)
		return d, true, err
	}
	c := f.getCall(req)
	err = f.s.Guard.Call(ctx, c.run)
	d, ran = c.d, c.ran
	f.putCall(c)
	return d, ran, err
}

// sharedCall carries one decision through Guard.Call without allocating a
// closure per call; run is c.decide, bound once. A call that its decision
// may give up on (sharedDecideBy) also carries its outcome, done, and who
// owns it after: state goes from callPending to callFinished (the decision
// reads it) or to callAbandoned (the call's goroutine accounts for it).
type sharedCall struct {
	f     *Store
	run   func(context.Context) error
	req   limiter.Request
	d     limiter.Decision
	ran   bool
	err   error
	done  chan struct{}
	state atomic.Int32
}

func (c *sharedCall) decide(ctx context.Context) error {
	c.ran = true
	return c.f.call(ctx, c.req, &c.d)
}

func (f *Store) getCall(req limiter.Request) *sharedCall {
	c := f.calls.Get().(*sharedCall)
	c.req = req
	return c
}

func (f *Store) putCall(c *sharedCall) {
	c.req, c.d, c.ran, c.err, c.done = limiter.Request{}, limiter.Decision{}, false, nil, nil
	c.state.Store(callPending)
	f.calls.Put(c)
}

// decideLocally applies the rule's fallback policy to a normalized request.
func (f *Store) decideLocally(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	var d limiter.Decision
	switch req.Rule.Fallback {
	case limiter.FallbackAllow:
		d = limiter.Decision{Allowed: true, Reason: limiter.Allowed, Limit: req.Rule.Limit,
			Remaining: req.Rule.Capacity() - req.Cost}
	case limiter.FallbackDeny:
		d = limiter.Decision{Reason: limiter.Shed, Limit: req.Rule.Limit,
			ResetAfter: f.s.DenyRetryAfter, RetryAfter: f.s.DenyRetryAfter}
	default:
		req.Rule = LocalRule(req.Rule, f.Instances(), req.Cost)
		var err error
		if d, err = f.s.Local.Decide(ctx, req); err != nil {
			return limiter.Decision{}, err
		}
	}
	d.Fallback = true
	return d, nil
}

// LocalRule is rule cut to one of n instances' share, as the local fallback
// enforces it: Limit and the capacity (Burst, or Limit for the window
// algorithms) are each divided by n and rounded up, and kept at least cost
// (so that a request the rule accepts can still pass), and at least 1.
//
// Rounding up means the n instances together may admit a little more than
// the rule while the shared store is down: for the token bucket, GCRA and
// leaky bucket, over a window of t at most
//
//	n×ceil(burst/n) + n×ceil(limit/n)×t/period ≤ burst + n−1 + (limit+n−1)×t/period
//
// that is the rule's own bound plus less than one token per instance, in
// burst and in rate. An instance count that is too low (instances not yet
// counted) lets more through; one that is too high refuses early.
func LocalRule(rule limiter.Rule, n int, cost int64) limiter.Rule {
	n64 := int64(max(n, 1))
	share := func(v int64) int64 { return max((v+n64-1)/n64, cost, 1) }
	capa := rule.Capacity()
	rule.Limit = share(rule.Limit)
	if !rule.Algorithm.IsWindow() {
		rule.Burst = share(capa)
	}
	return rule
}
