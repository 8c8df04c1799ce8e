package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/promreg"

	"github.com/throttledhq/throttled/signals"
)

// Gate is what the concurrency loop drives: a concurrency limit in front
// of an upstream that keeps a window of latency samples. bulkhead.Gate
// satisfies it.
type Gate interface {
	// TakeWindow returns what the gate saw since the previous call and
	// starts a new window: latency samples, their average and minimum,
	// and the most calls in flight at once.
	TakeWindow() (samples int, avg, fastest time.Duration, peak int)
	// SetLimit sets the concurrency limit.
	SetLimit(limit int)
}

// ConcurrencyLoop runs the concurrency law on one gate every Interval.
type ConcurrencyLoop struct {
	law   *Gradient
	gate  Gate
	clock Clock
	met   concurrencyMetrics
	sat   *saturation // nil when the gate does not count refusals
	cpu   RunDelayReader
	name  string
	log   *slog.Logger
	sum   limitSummary // touched only by Run
	top   int64        // the gate's TopAsked at the last step; touched only by Run

	mu sync.Mutex // guards st for State
	st GradientState
}

// NewConcurrencyLoop builds the loop for gate; name labels its metrics,
// registered with reg (nil: not registered). Loops with different names
// may share a registry. A nil clock means the wall clock.
func NewConcurrencyLoop(name string, law *Gradient, gate Gate, reg prometheus.Registerer, clock Clock, opts ...ConcurrencyOption) (*ConcurrencyLoop, error) {
	switch {
	case law == nil:
		return nil, fmt.Errorf("%w: law is nil", ErrMissingDependency)
	case gate == nil:
		return nil, fmt.Errorf("%w: gate is nil", ErrMissingDependency)
	case name == "":
		return nil, errors.New("controller: concurrency loop name must not be empty")
	}
	if clock == nil {
		clock = realClock{}
	}
	met, err := newConcurrencyMetrics(reg, name)
	if err != nil {
		return nil, err
	}
	l := &ConcurrencyLoop{law: law, gate: gate, clock: clock, met: met, st: law.Init(clock.Now()), name: name,
		log: slog.New(slog.DiscardHandler), cpu: signals.ProcessCPUWait()}
	for _, o := range opts {
		o(l)
	}
	if _, ok := gate.(RefusalCounter); ok {
		if l.sat, err = newSaturation(reg, name); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// State returns the loop's current state.
func (l *ConcurrencyLoop) State() GradientState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// Run sets the gate to the initial limit, drops what the gate saw before,
// then every Interval takes the gate's window, steps the law and sets the
// gate's limit, until ctx ends. It returns nil then. Call it once, from one
// goroutine; State may be called from any goroutine meanwhile.
func (l *ConcurrencyLoop) Run(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	l.gate.SetLimit(l.State().Permits())
	_, _, _, _ = l.gate.TakeWindow()
	_ = l.topAsked()
	l.met.observe(l.State())
	for l.clock.Sleep(ctx, l.law.s.Interval) == nil {
		l.tick()
	}
	return nil
}

func (l *ConcurrencyLoop) tick() {
	n, avg, fastest, peak := l.gate.TakeWindow()
	w := Window{Samples: n, Avg: avg, Min: fastest, MaxInFlight: peak, TopAsked: l.topAsked(), RunDelay: l.runDelay()}
	now := l.clock.Now()
	l.mu.Lock()
	prev := l.st.Permits()
	l.st = l.law.Step(l.st, w, now)
	st := l.st
	l.mu.Unlock()
	l.gate.SetLimit(st.Permits())
	l.note(prev, st, now)
	l.met.stepped(st)
	if rc, ok := l.gate.(RefusalCounter); ok && l.sat != nil {
		asked, refused := rc.Refusals()
		l.sat.update(asked, refused, now)
	}
}

// topAsked is how many calls of priority 0 asked since the previous call
// (0 if the gate does not count them).
func (l *ConcurrencyLoop) topAsked() int {
	tc, ok := l.gate.(TopCounter)
	if !ok {
		return 0
	}
	n := tc.TopAsked()
	d := n - l.top
	l.top = n
	return int(max(d, 0))
}

// concurrencyMetrics are the series of one loop (one name label value).
type concurrencyMetrics struct {
	steps    [len(gradientActions)]prometheus.Counter
	relearns prometheus.Counter
	baseline prometheus.Gauge
	latency  prometheus.Gauge
}

// gradientActions are the actions the concurrency law takes.
var gradientActions = [...]Action{ActionHold, ActionDecrease, ActionIncrease}

func newConcurrencyMetrics(reg prometheus.Registerer, name string) (concurrencyMetrics, error) {
	steps := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttled_inner_loop_steps_total",
		Help: "Steps of the inner (concurrency) loop, by what they did to the limit.",
	}, []string{"name", "action"})
	relearns := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttled_inner_loop_relearns_total",
		Help: "Times the inner loop took its latency baseline afresh after RelearnAfter at MinLimit.",
	}, []string{"name"})
	baseline := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "throttled_inner_loop_baseline_seconds",
		Help: "The inner loop's estimate of the upstream's latency without queueing.",
	}, []string{"name"})
	latency := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "throttled_inner_loop_latency_seconds",
		Help: "Average upstream latency in the inner loop's last window with samples.",
	}, []string{"name"})
	var err error
	if reg != nil {
		steps, err = shared(reg, steps)
		if err == nil {
			relearns, err = shared(reg, relearns)
		}
		if err == nil {
			baseline, err = shared(reg, baseline)
		}
		if err == nil {
			latency, err = shared(reg, latency)
		}
		if err != nil {
			return concurrencyMetrics{}, err
		}
	}
	m := concurrencyMetrics{relearns: relearns.WithLabelValues(name), baseline: baseline.WithLabelValues(name),
		latency: latency.WithLabelValues(name)}
	for i, a := range gradientActions {
		m.steps[i] = steps.WithLabelValues(name, a.String())
	}
	return m, nil
}

// shared registers c, or returns the collector of the same type already
// registered in its place (by another loop).
func shared[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promreg.Shared(reg, c)
	if err != nil {
		return c, fmt.Errorf("controller: registering metrics: %w", err)
	}
	return c, nil
}

func (m concurrencyMetrics) observe(st GradientState) {
	m.baseline.Set(st.Baseline.Seconds())
	m.latency.Set(st.Latency.Seconds())
}

func (m concurrencyMetrics) stepped(st GradientState) {
	for i, a := range gradientActions {
		if a == st.LastAction {
			m.steps[i].Inc()
		}
	}
	if st.Relearned {
		m.relearns.Inc()
	}
	m.observe(st)
}
