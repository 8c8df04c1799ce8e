package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Source reads the signals for one step. An error is logged and the step
// runs on an empty Input (so the law holds, then recovers).
type Source interface {
	Read(ctx context.Context) (Input, error)
}

// Publisher makes multipliers visible to the enforcers. The leader
// publishes a [multiplier.Set] each tick: the multiplier of every tier in
// [floor, ceiling], an epoch that never goes backwards across a leader change
// when the Publisher is a Loader, and the time of the step.
type Publisher interface {
	Publish(ctx context.Context, m multiplier.Set) error
}

// Loader is optionally implemented by a Publisher: it returns the last
// published multipliers (found false when nothing was ever published).
type Loader interface {
	Load(ctx context.Context) (m multiplier.Set, found bool, err error)
}

// Lease is the leader lease shared by the controller replicas. Acquire and
// Renew report whether this replica holds the lease afterwards; Release
// gives it up (called only by a replica that holds it).
type Lease interface {
	Acquire(ctx context.Context) (bool, error)
	Renew(ctx context.Context) (bool, error)
	Release(ctx context.Context) error
}

// Clock is the loop's time: Now, and Sleep, which returns ctx.Err() if ctx
// ends first.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Option changes how a Loop is built.
type Option func(*Loop)

// WithClock replaces the wall clock (for tests). nil keeps the default.
func WithClock(c Clock) Option {
	return func(l *Loop) {
		if c != nil {
			l.clock = c
		}
	}
}

// WithRand replaces the jitter's random source; rnd returns values in
// [0, 1), 0.5 meaning "no jitter". nil keeps math/rand/v2's Float64.
func WithRand(rnd func() float64) Option {
	return func(l *Loop) {
		if rnd != nil {
			l.rnd = rnd
		}
	}
}

// WithLogger sets where the loop logs failed reads, lease changes, failed
// publishes and, as the leader, every change of a multiplier (at INFO). nil keeps the default, which discards.
func WithLogger(log *slog.Logger) Option {
	return func(l *Loop) {
		if log != nil {
			l.log = log
		}
	}
}

// ErrMissingDependency is returned by NewLoop when a required argument is
// nil.
var ErrMissingDependency = errors.New("controller: missing dependency")

// Loop runs the law every period and publishes while it leads.
type Loop struct {
	law   atomic.Pointer[Law] // swapped by SetLaw, read by Run's goroutine
	src   Source
	pub   Publisher
	lease Lease
	clock Clock
	rnd   func() float64
	log   *slog.Logger
	met   *metrics

	mu     sync.Mutex // guards state and leader for State and Leader
	state  State
	leader bool // holds the lease
	synced bool // as leader, has loaded the last published state
	inst   instanceLaws
}

// NewLoop builds a loop; its metrics are registered with reg (nil: not
// registered).
func NewLoop(law *Law, src Source, pub Publisher, lease Lease, reg prometheus.Registerer, opts ...Option) (*Loop, error) {
	for _, dep := range []struct {
		name    string
		missing bool
	}{{"law", law == nil}, {"source", src == nil}, {"publisher", pub == nil}, {"lease", lease == nil}} {
		if dep.missing {
			return nil, fmt.Errorf("%w: %s is nil", ErrMissingDependency, dep.name)
		}
	}
	l := &Loop{src: src, pub: pub, lease: lease, clock: realClock{}, rnd: rand.Float64,
		log: slog.New(slog.DiscardHandler)}
	l.law.Store(law)
	for _, o := range opts {
		o(l)
	}
	met, err := newMetrics(reg, law)
	if err != nil {
		return nil, err
	}
	l.met = met
	l.state = law.Init(l.clock.Now())
	return l, nil
}

// SetLaw puts a new law in force from the next tick, as when tiers are
// added or changed at runtime. The state carries over: tiers the new law
// does not know are dropped, new ones start at their ceiling.
func (l *Loop) SetLaw(law *Law) error {
	if law == nil {
		return fmt.Errorf("%w: law is nil", ErrMissingDependency)
	}
	l.law.Store(law)
	return nil
}

// State returns the loop's current state (the shadow state on a follower).
func (l *Loop) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state
	st.Tiers = slices.Clone(st.Tiers)
	return st
}

// Leader reports whether this replica holds the lease.
func (l *Loop) Leader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

// Run ticks until ctx ends, then releases the lease if it holds it and
// returns the release error, if any. Call it once, from one goroutine;
// State and Leader may be called from any goroutine meanwhile.
func (l *Loop) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		l.tick(ctx)
		if l.clock.Sleep(ctx, l.delay()) != nil {
			break
		}
	}
	return l.resign(context.WithoutCancel(ctx))
}

// delay is the period with its jitter: Period × (1 + Jitter × (2r − 1)).
func (l *Loop) delay() time.Duration {
	s := l.law.Load().s
	return time.Duration(float64(s.Period) * (1 + s.Jitter*(2*l.rnd()-1)))
}

// tick reads, settles leadership, steps and, as the synced leader,
// publishes.
func (l *Loop) tick(ctx context.Context) {
	in := l.read(ctx)
	publish := l.lead(ctx)
	now := l.clock.Now()
	law := l.law.Load()
	l.mu.Lock()
	before := l.state
	l.state = law.Step(l.state, in, now)
	st := l.state
	l.mu.Unlock()
	l.met.observe(law, in, now)
	if !publish {
		return
	}
	logMoves(ctx, l.log, before, st)
	l.met.stepped(st)
	m := st.multipliers()
	if law.s.Scope == ScopeInstance {
		m = l.scoped(law, m, in, before, st, now)
	}
	cctx, cancel := l.callCtx(ctx)
	defer cancel()
	if err := l.pub.Publish(cctx, m); err != nil {
		l.log.Warn("controller: publish failed", "epoch", m.Epoch, "err", err)
	}
}

// scoped is m, the fleet's step from before to st, with each instance's
// own factors (ScopeInstance): the instances the source read are stepped
// on their own signals. A change of any instance's factors is a new epoch.
// The fleet's rate caps are left out: see ScopeInstance.
func (l *Loop) scoped(law *Law, m multiplier.Set, in Input, before, st State, now time.Time) multiplier.Set {
	var sigs map[string][]Signal
	if r, ok := l.src.(InstanceReader); ok {
		sigs = r.Instances()
	}
	own := l.inst.step(law, sigs, before, st, in.CPUWait, now)
	if l.inst.changed(own) {
		l.mu.Lock()
		l.state.Epoch++
		m.Epoch = l.state.Epoch
		l.mu.Unlock()
	}
	m.Instances, m.Rates = own, nil
	l.met.instances(l.inst.count(), own)
	return m
}

// callCtx bounds one call to an outside part by the period.
func (l *Loop) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.law.Load().s.Period)
}

func (l *Loop) read(ctx context.Context) Input {
	cctx, cancel := l.callCtx(ctx)
	defer cancel()
	in, err := l.src.Read(cctx)
	if err != nil {
		l.log.Warn("controller: reading signals failed; holding", "err", err)
		return Input{}
	}
	return in
}

// lead renews or acquires the lease and, on becoming leader, loads the
// last published state. It reports whether this tick may publish.
func (l *Loop) lead(ctx context.Context) bool {
	cctx, cancel := l.callCtx(ctx)
	defer cancel()
	if l.Leader() {
		ok, err := l.lease.Renew(cctx)
		if ok && err == nil {
			return l.sync(cctx)
		}
		if ctx.Err() != nil {
			return false // shutting down: keep the lease for resign to release
		}
		l.log.Warn("controller: lost the leader lease", "err", err)
		l.setLeader(false)
		return false
	}
	ok, err := l.lease.Acquire(cctx)
	if err != nil {
		l.log.Warn("controller: acquiring the leader lease failed", "err", err)
	}
	if !ok || err != nil {
		return false
	}
	l.log.Info("controller: became leader")
	l.setLeader(true)
	return l.sync(cctx)
}

func (l *Loop) setLeader(on bool) {
	l.mu.Lock()
	l.leader, l.synced = on, false
	l.mu.Unlock()
	l.inst.reset()
	l.met.leading(on)
}

// sync loads the last published state once per leadership, when the
// Publisher is a Loader. It reports whether the leader may publish.
func (l *Loop) sync(ctx context.Context) bool {
	if l.synced {
		return true
	}
	if ld, ok := l.pub.(Loader); ok {
		m, found, err := ld.Load(ctx)
		if err != nil {
			l.log.Warn("controller: loading the published state failed; not publishing", "err", err)
			return false
		}
		if found {
			law, now := l.law.Load(), l.clock.Now()
			l.mu.Lock()
			l.state = law.Adopt(l.state, m, now)
			st := l.state
			l.mu.Unlock()
			l.inst.adopt(law, st, m, now)
		}
	}
	l.synced = true
	return true
}

// resign releases the lease if this replica holds it.
func (l *Loop) resign(ctx context.Context) error {
	if !l.Leader() {
		return nil
	}
	cctx, cancel := l.callCtx(ctx)
	defer cancel()
	err := l.lease.Release(cctx)
	l.setLeader(false)
	if err != nil {
		return fmt.Errorf("controller: releasing the leader lease: %w", err)
	}
	return nil
}
