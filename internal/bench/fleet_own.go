package bench

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/overload"
)

// ownEvery is how often ownSampler reads every live instance's effective
// multipliers: a registry's Gather each, light enough at 36 instances.
const ownEvery = 250 * time.Millisecond

// ownSampler keeps the multipliers each live instance applies
// (throttled_effective_multiplier, read from its own registry) at the
// overload's start and from its end on, for overload.InstanceRecovery.
type ownSampler struct {
	f    *Fleet
	done chan struct{}
	ran  chan struct{}

	mu      sync.Mutex // guards the fields below
	start   time.Time  // of the run
	pre     map[string]map[string]float64
	from    time.Duration // the overload's end since start; 0 before it
	samples []overload.InstanceSample
}

func newOwnSampler(f *Fleet) *ownSampler {
	return &ownSampler{f: f, done: make(chan struct{}), ran: make(chan struct{})}
}

// begin notes the run's start and samples from then on until close.
func (o *ownSampler) begin(start time.Time) {
	o.mu.Lock()
	o.start = start
	o.mu.Unlock()
	go o.run()
}

func (o *ownSampler) run() {
	defer close(o.ran)
	t := time.NewTicker(ownEvery)
	defer t.Stop()
	for {
		select {
		case <-o.done:
			return
		case <-t.C:
		}
		o.mu.Lock()
		keep := o.from > 0
		o.mu.Unlock()
		if !keep {
			continue
		}
		m := o.read()
		o.mu.Lock()
		o.samples = append(o.samples, overload.InstanceSample{At: time.Since(o.start), M: m})
		o.mu.Unlock()
	}
}

// surgeFrom takes every instance's multipliers at the overload's start.
func (o *ownSampler) surgeFrom() {
	m := o.read()
	o.mu.Lock()
	o.pre = m
	o.mu.Unlock()
}

// surgeTo marks the overload's end: samples are kept from then on.
func (o *ownSampler) surgeTo() {
	o.mu.Lock()
	o.from = max(time.Since(o.start), time.Nanosecond)
	o.mu.Unlock()
}

// read is every live instance's effective multipliers, by its position
// among the members.
func (o *ownSampler) read() map[string]map[string]float64 {
	o.f.mu.Lock()
	regs := map[string]*prometheus.Registry{}
	for i, m := range o.f.members {
		if m.live {
			regs[strconv.Itoa(i)] = m.reg
		}
	}
	o.f.mu.Unlock()
	out := make(map[string]map[string]float64, len(regs))
	for id, reg := range regs {
		if tiers := effectiveMultipliers(reg); tiers != nil {
			out[id] = tiers
		}
	}
	return out
}

// recovery is overload.InstanceRecovery of the samples, in seconds (-1:
// not within the run), once close has returned.
func (o *ownSampler) recovery() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.from == 0 {
		return -1
	}
	d := overload.InstanceRecovery(o.pre, o.samples, o.from)
	if d < 0 {
		return -1
	}
	return roundS(d)
}

func (o *ownSampler) close() {
	close(o.done)
	o.mu.Lock()
	started := !o.start.IsZero()
	o.mu.Unlock()
	if started {
		<-o.ran
	}
}

// effectiveMultipliers is tier → throttled_effective_multiplier in reg,
// nil when reg has none.
func effectiveMultipliers(reg prometheus.Gatherer) map[string]float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return nil
	}
	for _, mf := range mfs {
		if mf.GetName() != "throttled_effective_multiplier" {
			continue
		}
		out := map[string]float64{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tier" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	return nil
}
