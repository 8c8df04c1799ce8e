package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// The fakes below implement the controller's own interfaces; the Redis and
// Prometheus implementations are tested against real servers elsewhere.

// fakeClock advances only when the loop sleeps, and ends the run after a
// fixed number of ticks. The loop calls it from one goroutine.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
	ticks  int
	cancel context.CancelFunc
	after  func(tick int) // if set, called at the end of each tick
}

func (c *fakeClock) Now() time.Time { return c.now }

// tick is the index of the tick in progress.
func (c *fakeClock) tick() int { return len(c.sleeps) }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.after != nil {
		c.after(c.tick())
	}
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	if len(c.sleeps) >= c.ticks {
		c.cancel()
	}
	return ctx.Err()
}

type fakeSource struct {
	clock *fakeClock
	read  func(tick int, now time.Time) (Input, error)
}

func (s *fakeSource) Read(context.Context) (Input, error) {
	return s.read(s.clock.tick(), s.clock.now)
}

type fakePublisher struct {
	clock     *fakeClock
	published []multiplier.Set
	ticks     []int // tick of each publish
	err       error
}

func (p *fakePublisher) Publish(_ context.Context, m multiplier.Set) error {
	p.published = append(p.published, m)
	p.ticks = append(p.ticks, p.clock.tick())
	return p.err
}

// loadingPublisher is a Publisher that is also a Loader.
type loadingPublisher struct {
	*fakePublisher
	load  func(tick int) (multiplier.Set, bool, error)
	loads []int
}

func (p *loadingPublisher) Load(context.Context) (multiplier.Set, bool, error) {
	p.loads = append(p.loads, p.clock.tick())
	return p.load(p.clock.tick())
}

// fakeLease answers from per-tick scripts and logs every call.
type fakeLease struct {
	clock      *fakeClock
	acquire    func(tick int) (bool, error)
	renew      func(tick int) (bool, error)
	releaseErr error
	calls      []string
	releaseCtx error // ctx.Err() seen by Release
}

func (l *fakeLease) Acquire(context.Context) (bool, error) {
	l.calls = append(l.calls, "acquire")
	return l.acquire(l.clock.tick())
}

func (l *fakeLease) Renew(context.Context) (bool, error) {
	l.calls = append(l.calls, "renew")
	return l.renew(l.clock.tick())
}

func (l *fakeLease) Release(ctx context.Context) error {
	l.calls = append(l.calls, "release")
	l.releaseCtx = ctx.Err()
	return l.releaseErr
}

var errFake = errors.New("fake failure")

func always(ok bool, err error) func(int) (bool, error) {
	return func(int) (bool, error) { return ok, err }
}

// harness wires a loop to the fakes: three tiers, period 5 s, no jitter
// (the random source returns 0.5), default cool-down 9 s, ticks at t0,
// t0+5 s, …; every read is a fresh overload unless changed.
type harness struct {
	clock *fakeClock
	src   *fakeSource
	pub   *fakePublisher
	lease *fakeLease
	reg   *prometheus.Registry
	ctx   context.Context
}

func newHarness(ticks int) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	c := &fakeClock{now: t0, ticks: ticks, cancel: cancel}
	return &harness{
		clock: c,
		src: &fakeSource{clock: c, read: func(_ int, now time.Time) (Input, error) {
			return Input{Signals: []Signal{{Name: "latency_p99", Value: 2, Target: 1, Valid: true, At: now}}}, nil
		}},
		pub:   &fakePublisher{clock: c},
		lease: &fakeLease{clock: c, acquire: always(true, nil), renew: always(true, nil)},
		reg:   prometheus.NewRegistry(),
		ctx:   ctx,
	}
}

func (h *harness) loop(t *testing.T, pub Publisher, opts ...Option) *Loop {
	t.Helper()
	law := mustLaw(t, Settings{Tiers: threeTiers().Tiers})
	if pub == nil {
		pub = h.pub
	}
	opts = append([]Option{WithClock(h.clock), WithRand(func() float64 { return 0.5 })}, opts...)
	l, err := NewLoop(law, h.src, pub, h.lease, h.reg, opts...)
	if err != nil {
		t.Fatalf("NewLoop: %v", err)
	}
	return l
}

// run runs the loop to the end of its ticks and fails on a Run error.
func (h *harness) run(t *testing.T, l *Loop) {
	t.Helper()
	if err := l.Run(h.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
