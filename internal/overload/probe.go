package overload

import (
	"maps"
	"sync"
	"time"
)

// sample is the multipliers from At (since the start) on.
type sample struct {
	At time.Duration
	M  map[string]float64
}

// probe keeps the multiplier samples that differ from the one before: the
// change points, which is all that recovery and flips need, and little
// memory however long the run.
type probe struct {
	mu      sync.Mutex // guards samples
	samples []sample
}

func (p *probe) record(at time.Duration, m map[string]float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.samples); n > 0 && maps.Equal(p.samples[n-1].M, m) {
		return
	}
	p.samples = append(p.samples, sample{at, maps.Clone(m)})
}

// at is the sample in effect at t (nil before the first).
func (p *probe) at(t time.Duration) map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m map[string]float64
	for i := len(p.samples) - 1; i >= 0; i-- {
		if p.samples[i].At <= t {
			m = p.samples[i].M
			break
		}
	}
	return m
}

func (p *probe) all() []sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sample(nil), p.samples...)
}

// whole tells whether every multiplier of m is at 1 (a missing tier is).
func whole(m map[string]float64) bool {
	for _, v := range m {
		if v < 1-1e-9 {
			return false
		}
	}
	return true
}

// recovery is the time from `from` until the multipliers are whole for
// good (until end of the samples): 0 if they already are at `from` (or never
// left 1), -1 if the last sample still has one below 1.
func recovery(samples []sample, from time.Duration) time.Duration {
	last := -1
	for i, s := range samples {
		if !whole(s.M) {
			last = i
		}
	}
	switch {
	case last < 0:
		return 0
	case last == len(samples)-1:
		return -1
	}
	return max(0, samples[last+1].At-from)
}

// flips counts the direction changes of every tier's multiplier within
// [from, to), starting from the values in effect at from.
func flips(samples []sample, from, to time.Duration) int {
	tiers := map[string]bool{}
	for _, s := range samples {
		for t := range s.M {
			tiers[t] = true
		}
	}
	n := 0
	for t := range tiers {
		n += tierFlips(samples, t, from, to)
	}
	return n
}

func tierFlips(samples []sample, tier string, from, to time.Duration) int {
	value := func(s sample) float64 {
		if v, ok := s.M[tier]; ok {
			return v
		}
		return 1
	}
	prev, have, dir, n := 0.0, false, 0, 0
	for _, s := range samples {
		if s.At >= to {
			break
		}
		v := value(s)
		if s.At > from && have {
			d := sign(v - prev)
			if d != 0 && dir != 0 && d != dir {
				n++
			}
			if d != 0 {
				dir = d
			}
		}
		prev, have = v, true
	}
	return n
}

func sign(x float64) int {
	switch {
	case x > 1e-12:
		return 1
	case x < -1e-12:
		return -1
	}
	return 0
}
