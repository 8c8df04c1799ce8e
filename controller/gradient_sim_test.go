package controller

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The simulation: a queueing server (workers, a fixed service time, one
// FIFO queue; latency = service + queue wait) behind one or more gates,
// each with its own offered load and its own copy of the law, in virtual
// time at a fixed tick. Arrivals are Poisson (a seeded Bernoulli trial per
// tick), so every run is the same. A gate admits a call only below its limit and
// sheds the rest (no gate queue: it would not change what the upstream
// sees).

type simCall struct {
	gate int
	sent time.Duration
}

type simGate struct {
	rate     func(t time.Duration) float64 // offered calls per second at t
	top      float64                       // of which of priority 0, per second
	topAsked int                           // in the current window
	inflight int
	peak     int
	n        int
	sum      time.Duration
	fastest  time.Duration
	st       GradientState
	admitted int
}

type simServer struct {
	service time.Duration
	busy    []time.Duration // per worker, when it is free; 0 = idle
	calls   []simCall       // per worker
	queue   []simCall
}

// simWindow is what one gate saw in one interval of the simulation.
type simWindow struct {
	at      time.Duration
	limit   int
	latency time.Duration // average; 0 without samples
	done    int
	peak    int // most calls in flight at once
}

type sim struct {
	g      *Gradient
	tick   time.Duration
	server simServer
	gates  []*simGate
	rng    *rand.Rand
	log    [][]simWindow // per gate
}

func newSim(g *Gradient, workers int, service time.Duration, rates ...func(time.Duration) float64) *sim {
	s := &sim{g: g, tick: 100 * time.Microsecond, server: simServer{service: service,
		busy: make([]time.Duration, workers), calls: make([]simCall, workers)}, rng: rand.New(rand.NewPCG(1, 2))}
	for _, r := range rates {
		s.gates = append(s.gates, &simGate{rate: r, st: g.Init(t0)})
	}
	s.log = make([][]simWindow, len(rates))
	return s
}

func constant(rate float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return rate }
}

// surge offers before until at, after from then on.
func surge(before, after float64, at time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < at {
			return before
		}
		return after
	}
}

// run simulates d of virtual time.
func (s *sim) run(d time.Duration) {
	interval := s.g.Settings().Interval
	for t := s.tick; t <= d; t += s.tick {
		s.complete(t)
		for i, g := range s.gates {
			r := s.rng.Float64()
			if r < g.top*s.tick.Seconds() {
				g.topAsked++
			}
			if r < g.rate(t)*s.tick.Seconds() && g.inflight < g.st.Permits() {
				g.inflight++
				g.admitted++
				g.peak = max(g.peak, g.inflight)
				s.server.queue = append(s.server.queue, simCall{gate: i, sent: t})
			}
		}
		s.dispatch(t)
		if t%interval == 0 {
			s.step(t)
		}
	}
}

func (s *sim) complete(t time.Duration) {
	for w, free := range s.server.busy {
		if free == 0 || free > t {
			continue
		}
		c := s.server.calls[w]
		g := s.gates[c.gate]
		g.inflight--
		g.n++
		g.sum += t - c.sent
		if g.fastest == 0 || t-c.sent < g.fastest {
			g.fastest = t - c.sent
		}
		s.server.busy[w] = 0
	}
}

func (s *sim) dispatch(t time.Duration) {
	for w, free := range s.server.busy {
		if free != 0 || len(s.server.queue) == 0 {
			continue
		}
		s.server.calls[w] = s.server.queue[0]
		s.server.queue = s.server.queue[1:]
		s.server.busy[w] = t + s.server.service
	}
}

func (s *sim) step(t time.Duration) {
	for i, g := range s.gates {
		w := Window{Samples: g.n, Min: g.fastest, MaxInFlight: g.peak, TopAsked: g.topAsked}
		if g.n > 0 {
			w.Avg = g.sum / time.Duration(g.n)
		}
		g.st = s.g.Step(g.st, w, t0.Add(t))
		s.log[i] = append(s.log[i], simWindow{at: t, limit: g.st.Permits(), latency: w.Avg, done: g.n, peak: g.peak})
		g.n, g.sum, g.fastest, g.peak, g.topAsked = 0, 0, 0, g.inflight, 0
	}
}

// between returns gate i's windows in [from, to).
func (s *sim) between(i int, from, to time.Duration) []simWindow {
	var out []simWindow
	for _, w := range s.log[i] {
		if w.at >= from && w.at < to {
			out = append(out, w)
		}
	}
	return out
}

func (s *sim) trace(t *testing.T, i int, from, to time.Duration) {
	t.Helper()
	for _, w := range s.between(i, from, to) {
		t.Logf("gate %d t=%v limit=%d latency=%v done=%d", i, w.at, w.limit, w.latency, w.done)
	}
}

// simStats summarises windows: limit range and mean, mean latency (over
// windows with samples), completions.
type simStats struct {
	minLimit, maxLimit int
	meanLimit          float64
	meanLatency        time.Duration
	maxLatency         time.Duration
	done, maxPeak      int
}

func stats(ws []simWindow) simStats {
	st := simStats{minLimit: math.MaxInt}
	var sumLat time.Duration
	n := 0
	for _, w := range ws {
		st.minLimit, st.maxLimit = min(st.minLimit, w.limit), max(st.maxLimit, w.limit)
		st.meanLimit += float64(w.limit) / float64(len(ws))
		st.done += w.done
		st.maxPeak = max(st.maxPeak, w.peak)
		if w.done > 0 {
			sumLat += w.latency
			st.maxLatency = max(st.maxLatency, w.latency)
			n++
		}
	}
	if n > 0 {
		st.meanLatency = sumLat / time.Duration(n)
	}
	return st
}

const (
	simWorkers = 8
	simService = 20 * time.Millisecond // capacity 400 calls/s
)

// TestGradientClosedLoopConvergesNearCapacity: offered 700 calls/s against
// a capacity of 400, the limit settles near workers × (1 + Tolerance) (+
// the allowance), keeps every worker busy, holds latency within tolerance
// of the service time, and does not oscillate.
func TestGradientClosedLoopConvergesNearCapacity(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	s := newSim(g, simWorkers, simService, constant(700))
	s.run(10 * time.Second)
	st := stats(s.between(0, 5*time.Second, 10*time.Second))
	t.Logf("last 5 s: %+v", st)
	if st.meanLimit < simWorkers || st.meanLimit > simWorkers*1.25+3 {
		t.Errorf("mean limit %.1f, want in [%d, %.0f]", st.meanLimit, simWorkers, simWorkers*1.25+3)
	}
	if st.maxLimit-st.minLimit > 4 {
		t.Errorf("limit ranged over [%d, %d]: oscillating", st.minLimit, st.maxLimit)
	}
	if limit := time.Duration(float64(simService) * 1.25 * 1.3); st.meanLatency > limit {
		t.Errorf("mean latency %v, want at most %v", st.meanLatency, limit)
	}
	if st.done < 0.95*400*5 {
		t.Errorf("%d calls served in 5 s, want at least 95%% of the capacity of 2000", st.done)
	}
}

// TestGradientClosedLoopReactsToSurge: at 300 calls/s the limit stays
// where it is; when the load jumps to 700 calls/s the limit is cut within
// two intervals, and latency is back under twice the service time within
// half a second.
func TestGradientClosedLoopReactsToSurge(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	s := newSim(g, simWorkers, simService, surge(300, 700, 3*time.Second))
	s.run(8 * time.Second)
	before := stats(s.between(0, 2*time.Second, 3*time.Second+ms))
	reacted := stats(s.between(0, 3200*ms, 3300*ms))
	after := stats(s.between(0, 3500*ms, 8*time.Second))
	s.trace(t, 0, 3*time.Second, 3600*ms)
	if reacted.maxLimit >= before.minLimit {
		t.Errorf("limit %d two intervals into the surge, want below %d", reacted.maxLimit, before.minLimit)
	}
	if after.maxLatency > 2*simService {
		t.Errorf("latency up to %v from 0.5 s after the surge, want at most %v", after.maxLatency, 2*simService)
	}
	if after.meanLimit < simWorkers || after.meanLimit > simWorkers*1.25+3 {
		t.Errorf("mean limit %.1f after the surge, want in [%d, %.0f]", after.meanLimit, simWorkers, simWorkers*1.25+3)
	}
}

// TestGradientClosedLoopIdleLimitDoesNotRunAway: at half the capacity
// latency sits on the baseline, but the limit grows only while at least
// half of it is in use, so it stays within about twice the most calls ever
// in flight (a step from there adds at most half of 2 × 2 + 1).
func TestGradientClosedLoopIdleLimitDoesNotRunAway(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	s := newSim(g, simWorkers, simService, constant(200))
	s.run(10 * time.Second)
	st := stats(s.between(0, 0, 10*time.Second))
	t.Logf("%+v", st)
	if st.maxLimit > max(3*st.maxPeak+1, g.Settings().InitialLimit) {
		t.Errorf("limit rose to %d at half load with at most %d in flight", st.maxLimit, st.maxPeak)
	}
}

// TestGradientClosedLoopSharesAcrossInstances: three instances, each with
// its own law, in front of one server. Together they settle near workers ×
// (1 + Tolerance) + 3 allowances (13, give or take each one's rounding to
// whole permits), keep latency within twice the service time, and share
// the capacity about evenly.
func TestGradientClosedLoopSharesAcrossInstances(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	s := newSim(g, simWorkers, simService, constant(250), constant(250), constant(250))
	s.run(10 * time.Second)
	var sum float64
	total := 0
	var served []int
	for i := range s.gates {
		st := stats(s.between(i, 5*time.Second, 10*time.Second))
		sum += st.meanLimit
		total += st.done
		served = append(served, st.done)
		if st.meanLatency > 2*simService {
			t.Errorf("gate %d: mean latency %v, want at most %v", i, st.meanLatency, 2*simService)
		}
	}
	t.Logf("sum of limits %.1f, served %v", sum, served)
	if sum < simWorkers || sum > 2*simWorkers+3 {
		t.Errorf("sum of the mean limits %.1f, want in [%d, %d]", sum, simWorkers, 2*simWorkers+3)
	}
	for i, n := range served {
		if float64(n) < 0.2*float64(total) {
			t.Errorf("gate %d served %d of %d", i, n, total)
		}
	}
	if total < 0.95*400*5 {
		t.Errorf("%d calls served in 5 s, want at least 95%% of 2000", total)
	}
}
