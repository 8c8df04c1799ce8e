package controller

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults used for zero-valued fields of [GradientSettings]. They are
// applied in one place, GradientSettings.withDefaults.
const (
	DefaultInterval          = 100 * time.Millisecond
	DefaultMinLimit          = 2
	DefaultMaxLimit          = 1000
	DefaultInitialLimit      = 20
	DefaultTolerance         = 0.25
	DefaultQuiet             = 0.25
	DefaultSmoothing         = 0.5
	DefaultAllowance         = 1.0
	DefaultBaselineWindow    = 30 * time.Second
	DefaultRelearnAfter      = 5 * time.Second
	DefaultMinSamples        = 1
	DefaultDecayWindow       = time.Second
	DefaultDecayStarvedDelay = 250 * time.Microsecond
)

// The gradient is clamped into [minGradient, maxGradient] (as in Envoy's
// gradient controller), so that one outlying window can at most halve or
// double the limit before smoothing. baselineFall is the weight with which
// a window faster than the baseline pulls it down.
const (
	minGradient  = 0.5
	maxGradient  = 2.0
	baselineFall = 0.5
)

// GradientSettings configure the fast local concurrency law ([Gradient])
// and its loop ([ConcurrencyLoop]). The zero value of every field means the
// default named beside it.
type GradientSettings struct {
	// Interval is the sampling window and the loop's period. 0 means
	// DefaultInterval (100 ms).
	Interval time.Duration
	// MinLimit is the lowest limit, at least 1. 0 means DefaultMinLimit.
	// With N enforcing instances in front of one upstream, N × MinLimit
	// calls are always let through: keep it below what the upstream serves
	// without queueing.
	MinLimit int
	// MaxLimit is the highest limit, at least MinLimit. 0 means
	// DefaultMaxLimit.
	MaxLimit int
	// InitialLimit is the limit before the first sample. 0 means
	// DefaultInitialLimit, clamped into [MinLimit, MaxLimit].
	InitialLimit int
	// Tolerance is how far above the baseline the window's average latency
	// may rise before the limit decreases: the gradient is
	// baseline × (1 + Tolerance) / latency. In (0, 1]; 0 means
	// DefaultTolerance.
	Tolerance float64
	// Smoothing is the weight of each step's new estimate against the
	// current limit, in (0, 1]: 1 applies it at once. 0 means
	// DefaultSmoothing.
	Smoothing float64
	// Allowance is the queue the law allows for: added to the estimate
	// every step (as Gradient2's queueSize, Envoy's headroom), it lets the
	// limit grow when latency sits on the baseline. With N instances the
	// steady state is about capacity × (1 + Tolerance) + N × Allowance
	// calls in flight. 0 means DefaultAllowance.
	Allowance float64
	// Target, if positive, is an absolute cap on latency: a window whose
	// average is above it always decreases the limit, whatever the
	// baseline. 0 means no cap.
	Target time.Duration
	// Quiet is a fraction of Target: a window whose average latency is at
	// most Target × Quiet never decreases the limit. Latency that low
	// needs no protection, and a gradient against a baseline learned
	// before the upstream slowed down (twice the service time, say) would
	// otherwise shrink the limit towards MinLimit, and throughput with it,
	// for a latency no limit can lower. Used only with a Target; 0 means
	// DefaultQuiet.
	Quiet float64
	// BaselineWindow is the time constant with which the baseline rises
	// towards a slower window average (it falls towards a faster one at
	// once, with weight 1/2). 0 means DefaultBaselineWindow. It must be
	// longer than Interval.
	BaselineWindow time.Duration
	// RelearnAfter: once the limit has stayed at MinLimit this long, the
	// baseline is taken again from the current window (a probe, as Envoy
	// does after 5 windows at its minimum), in case it had fallen too low
	// to be met. 0 means DefaultRelearnAfter.
	RelearnAfter time.Duration
	// MinSamples is the fewest latency samples a window needs to move the
	// limit; a window with fewer holds. 0 means DefaultMinSamples.
	MinSamples int
	// DecayWindow is the time constant with which a limit the calls never
	// come near (fewer than three quarters of it in flight, latency with
	// room to grow) falls towards twice the most in flight plus Allowance.
	// A limit nobody uses is a promise the upstream may not keep: N
	// instances behind one upstream, each at its initial limit, let N ×
	// InitialLimit calls onto it in a surge's first interval, and a busy
	// instance's limit should stand above a quiet one's when the surge
	// comes. 0 means DefaultDecayWindow.
	DecayWindow time.Duration
	// DecayStarvedDelay: a window whose Window.RunDelay is at or above it
	// does not decay the limit. A process short of CPU stalls its own
	// callers, so its calls in flight fall for want of CPU, not of demand;
	// a limit decayed on them meets the next surge small, with starved
	// latencies above Target that only cut it further. On a host that
	// keeps the process waiting this long all the time, unused limits stay
	// where they are, as without the decay. Positive; 0 means
	// DefaultDecayStarvedDelay.
	DecayStarvedDelay time.Duration
}

// withDefaults returns s with every zero field replaced by its default.
func (s GradientSettings) withDefaults() GradientSettings {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Interval, DefaultInterval)
	def(&s.BaselineWindow, DefaultBaselineWindow)
	def(&s.RelearnAfter, DefaultRelearnAfter)
	def(&s.DecayWindow, DefaultDecayWindow)
	def(&s.DecayStarvedDelay, DefaultDecayStarvedDelay)
	for _, f := range []struct {
		v *int
		d int
	}{{&s.MinLimit, DefaultMinLimit}, {&s.MaxLimit, DefaultMaxLimit}, {&s.MinSamples, DefaultMinSamples}} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	if s.InitialLimit == 0 {
		s.InitialLimit = min(max(DefaultInitialLimit, s.MinLimit), s.MaxLimit)
	}
	for _, f := range []struct {
		v *float64
		d float64
	}{{&s.Tolerance, DefaultTolerance}, {&s.Smoothing, DefaultSmoothing}, {&s.Allowance, DefaultAllowance},
		{&s.Quiet, DefaultQuiet}} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	return s
}

// Validate reports every invalid field, each error naming the field and
// wrapping [ErrInvalidSettings]. Zero values are valid (they mean the
// defaults).
func (s GradientSettings) Validate() error {
	d := s.withDefaults()
	var errs []error
	check := func(ok bool, field string, v any, want string) {
		if !ok {
			errs = append(errs, invalid(field, v, want))
		}
	}
	check(d.Interval > 0, "interval", s.Interval, "must be positive")
	check(d.MinLimit >= 1, "min_limit", s.MinLimit, "must be at least 1")
	check(d.MaxLimit >= d.MinLimit, "max_limit", s.MaxLimit, fmt.Sprintf("must be at least min_limit %d", d.MinLimit))
	check(d.InitialLimit >= d.MinLimit && d.InitialLimit <= d.MaxLimit, "initial_limit", s.InitialLimit,
		fmt.Sprintf("must be in [%d, %d]", d.MinLimit, d.MaxLimit))
	check(d.Tolerance > 0 && d.Tolerance <= 1, "tolerance", s.Tolerance, "must be in (0, 1]")
	check(d.Smoothing > 0 && d.Smoothing <= 1, "smoothing", s.Smoothing, "must be in (0, 1]")
	check(d.Allowance > 0 && !math.IsInf(d.Allowance, 0), "allowance", s.Allowance, "must be positive and finite")
	check(d.Target >= 0, "target", s.Target, "must not be negative")
	check(d.Quiet > 0 && d.Quiet < 1, "quiet", s.Quiet, "must be in (0, 1)")
	check(d.BaselineWindow > 0 && d.BaselineWindow > d.Interval, "baseline_window", s.BaselineWindow,
		fmt.Sprintf("must be longer than interval %v", d.Interval))
	check(d.RelearnAfter > 0, "relearn_after", s.RelearnAfter, "must be positive")
	check(d.MinSamples >= 1, "min_samples", s.MinSamples, "must be at least 1")
	check(d.DecayWindow > 0, "decay_window", s.DecayWindow, "must be positive")
	check(d.DecayStarvedDelay > 0, "decay_starved_delay", s.DecayStarvedDelay, "must be positive")
	return errors.Join(errs...)
}

// Window is what the gate saw during one interval.
type Window struct {
	Samples     int           // calls completed with a latency sample
	Avg         time.Duration // their average latency (upstream round trip)
	Min         time.Duration // their shortest latency; 0 means unknown (Avg)
	MaxInFlight int           // the most calls in flight at once
	// TopAsked is how many calls of the most important priority (0) asked
	// for a permit during the window, admitted or not; 0 if unknown.
	TopAsked int
	// RunDelay is how long this process's threads waited for a CPU per time
	// slice in the window (signals.SharedCPUWait.RunDelay); 0 if unknown.
	RunDelay time.Duration
}

// GradientState is what the concurrency law carries from one step to the
// next. Step never modifies the state it is given.
type GradientState struct {
	// Limit is the concurrency limit, unrounded; [GradientState.Permits]
	// is what the gate enforces.
	Limit float64
	// Baseline is the estimate of the upstream's latency without queueing;
	// zero until the first window with samples.
	Baseline time.Duration
	// Latency is the average latency of the last window with samples.
	Latency time.Duration
	// LastAction is what the last step did to the limit.
	LastAction Action
	// AtMinSince is when the limit (rounded) last came down to MinLimit;
	// zero while it is above.
	AtMinSince time.Time
	// Relearned reports that the last step took the baseline afresh.
	Relearned bool
	// At is the time of the last step.
	At time.Time
}

// Permits is the limit as the gate enforces it: rounded to the nearest
// whole call, at least 1.
func (s GradientState) Permits() int {
	if !(s.Limit >= 1) { // also NaN
		return 1
	}
	return int(math.Round(math.Min(s.Limit, math.MaxInt32)))
}

// String formats the state, e.g. "limit=12.50 baseline=20ms latency=31ms
// decrease".
func (s GradientState) String() string {
	return fmt.Sprintf("limit=%.2f baseline=%v latency=%v %v", s.Limit, s.Baseline, s.Latency, s.LastAction)
}

// Gradient is the validated concurrency law. It is immutable and safe for
// concurrent use.
type Gradient struct {
	s GradientSettings // defaulted
}

// NewGradient validates s and returns the law it describes.
func NewGradient(s GradientSettings) (*Gradient, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Gradient{s: s.withDefaults()}, nil
}

// Settings returns the settings with defaults applied.
func (g *Gradient) Settings() GradientSettings { return g.s }

// Init returns the starting state: InitialLimit, no baseline yet.
func (g *Gradient) Init(now time.Time) GradientState {
	return GradientState{Limit: float64(g.s.InitialLimit), At: now}
}

// Step runs the law once on the window w that ended at now, and returns
// the next state. See the package doc for the law.
func (g *Gradient) Step(st GradientState, w Window, now time.Time) GradientState {
	next := g.normalize(st)
	next.At, next.LastAction, next.Relearned = now, ActionHold, false
	if w.Samples < g.s.MinSamples || w.Avg <= 0 {
		return next // no evidence: hold, baseline and all
	}
	lat := w.Avg
	base := next.Baseline
	if base <= 0 {
		// The first samples. The fastest of them is the best guess of the
		// latency without queueing: the instance may start under overload.
		// A guess too low is corrected by relearning at MinLimit; one too
		// high would let the queue stand.
		base = lat
		if w.Min > 0 && w.Min < lat {
			base = w.Min
		}
	}
	est, unused := g.estimate(next.Limit, base, lat, w.MaxInFlight)
	limit := next.Limit + (est-next.Limit)*g.s.Smoothing
	if unused && w.RunDelay < g.s.DecayStarvedDelay {
		limit = g.decay(next.Limit, w.MaxInFlight, now.Sub(st.At))
	}
	limit = math.Max(limit, g.topRoom(w, now.Sub(st.At)))
	limit = math.Max(float64(g.s.MinLimit), math.Min(float64(g.s.MaxLimit), limit))
	switch {
	case limit < next.Limit:
		next.LastAction = ActionDecrease
	case limit > next.Limit:
		next.LastAction = ActionIncrease
	}
	next.Limit, next.Latency = limit, lat
	next.Baseline = g.follow(base, lat, now.Sub(st.At))
	g.relearn(&next, now)
	return next
}

// estimate is the new limit before smoothing:
//
//	gradient = baseline × (1 + Tolerance) / latency
//	gradient = max(gradient, min(1, Target × Quiet / latency))   with a Target
//	estimate = limit × clamp(gradient, 0.5, 2) + Allowance
//
// So at or below Target × Quiet the gradient is at least 1, and just above
// it a little less: a baseline learned before the upstream slowed down no
// longer halves the limit there. Above Target the gradient is at most
// Target / latency and no allowance is added, so that the limit
// decreases. An estimate above the limit is not taken while fewer than
// three quarters of the permits were ever in use: latency measured at low
// concurrency says nothing about a higher limit; the limit is then unused
// (see DecayWindow). (Gradient2 says half;
// with half, the limit sat at 2.5 × the calls a 0.8 × capacity load keeps
// in flight, and when the upstream slowed down, lower tiers filled its
// queue for 130 ms before the limit bound.)
func (g *Gradient) estimate(limit float64, base, lat time.Duration, inflight int) (est float64, unused bool) {
	grad := float64(base) * (1 + g.s.Tolerance) / float64(lat)
	if t := g.s.Target; t > 0 {
		// quiet: no decrease, and no cliff past it
		grad = math.Max(grad, math.Min(1, float64(t)*g.s.Quiet/float64(lat)))
	}
	grad = math.Max(minGradient, math.Min(maxGradient, grad))
	if t := g.s.Target; t > 0 && lat > t {
		return limit * math.Max(minGradient, math.Min(grad, float64(t)/float64(lat))), false
	}
	est = limit*grad + g.s.Allowance
	if est > limit && float64(inflight) < limit*3/4 {
		return limit, true
	}
	return est, false
}

// topRoom is the fewest permits the limit keeps within Target: what the
// window's priority-0 calls need at its latency (Little's law), the
// latency counted at most to Target × Quiet, × (1 + Tolerance). Under one
// latency the gradients of instances behind one upstream settle at one
// limit whatever their shares, and the busiest shed its priority-0 calls
// (premium, within quota) at its gate. The bound keeps an instance whose
// priority-0 calls alone fill the upstream near the quiet latency. 0
// above Target, without a Target, or without priority-0 calls.
func (g *Gradient) topRoom(w Window, dt time.Duration) float64 {
	t := g.s.Target
	if t <= 0 || w.TopAsked <= 0 || w.Avg > t {
		return 0
	}
	if dt <= 0 {
		dt = g.s.Interval
	}
	return float64(w.TopAsked) / dt.Seconds() * min(w.Avg, time.Duration(float64(t)*g.s.Quiet)).Seconds() * (1 + g.s.Tolerance)
}

// decay is the limit of a gate whose calls stayed below three quarters of
// it, after dt (Interval if unknown): towards 2 × inflight + Allowance, as
// an exponential average with time constant DecayWindow; never up.
func (g *Gradient) decay(limit float64, inflight int, dt time.Duration) float64 {
	used := 2*float64(inflight) + g.s.Allowance
	if used >= limit {
		return limit
	}
	if dt <= 0 {
		dt = g.s.Interval
	}
	return limit - (limit-used)*(1-math.Exp(-float64(dt)/float64(g.s.DecayWindow)))
}

// follow moves the baseline towards the window's latency: down at once
// (weight 1/2), up slowly, as an exponential average with time constant
// BaselineWindow over the time dt since the previous step (Interval if
// unknown).
func (g *Gradient) follow(base, lat, dt time.Duration) time.Duration {
	if lat <= base {
		return base + time.Duration(float64(lat-base)*baselineFall)
	}
	if dt <= 0 {
		dt = g.s.Interval
	}
	w := 1 - math.Exp(-float64(dt)/float64(g.s.BaselineWindow))
	return base + time.Duration(float64(lat-base)*w)
}

// relearn keeps the time the limit has sat at MinLimit (as the gate sees
// it: rounded), and once that is RelearnAfter takes the baseline from the
// current window.
func (g *Gradient) relearn(st *GradientState, now time.Time) {
	switch {
	case st.Permits() > g.s.MinLimit:
		st.AtMinSince = time.Time{}
	case st.AtMinSince.IsZero():
		st.AtMinSince = now
	case now.Sub(st.AtMinSince) >= g.s.RelearnAfter:
		st.Baseline, st.Relearned, st.AtMinSince = st.Latency, true, now
	}
}

// normalize clamps a state from elsewhere (an older configuration, a
// caller's zero value) into the law's bounds: a limit that is not a number
// becomes InitialLimit, a negative baseline none.
func (g *Gradient) normalize(st GradientState) GradientState {
	if math.IsNaN(st.Limit) {
		st.Limit = float64(g.s.InitialLimit)
	}
	st.Limit = math.Max(float64(g.s.MinLimit), math.Min(float64(g.s.MaxLimit), st.Limit))
	st.Baseline = max(st.Baseline, 0)
	return st
}
