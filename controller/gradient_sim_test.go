package controller

import (
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
	inflight int
	peak     int
	n        int
	sum      time.Duration
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
			if s.rng.Float64() < g.rate(t)*s.tick.Seconds() && g.inflight < g.st.Permits() {
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
		w := Window{Samples: g.n, MaxInFlight: g.peak}
		if g.n > 0 {
			w.Avg = g.sum / time.Duration(g.n)
		}
		g.st = s.g.Step(g.st, w, t0.Add(t))
		s.log[i] = append(s.log[i], simWindow{at: t, limit: g.st.Permits(), latency: w.Avg, done: g.n})
		g.n, g.sum, g.peak = 0, 0, g.inflight
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
