package bench

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// ownEvery is how often ownSampler reads every live instance's requests
// from the overload's start: the intervals overload.ExcessRecovery and
// overload.BeyondExcessPct judge.
const ownEvery = time.Second

// ownSampler keeps every live instance's throttled_requests_total, read
// from its own registry at the overload's start and end and every
// ownEvery from its start, for overload.ExcessRecovery and
// overload.BeyondExcessPct.
type ownSampler struct {
	f    *Fleet
	done chan struct{}
	ran  chan struct{}

	mu      sync.Mutex    // guards the fields below
	start   time.Time     // of the run
	surge   time.Duration // the overload's start since start
	from    time.Duration // its end; 0 before it
	samples []overload.InstanceSample
}

func newOwnSampler(f *Fleet) *ownSampler {
	return &ownSampler{f: f, done: make(chan struct{}), ran: make(chan struct{})}
}

// begin notes the run's start.
func (o *ownSampler) begin(start time.Time) {
	o.mu.Lock()
	o.start = start
	o.mu.Unlock()
}

// surgeFrom marks the overload's start and samples from then on until
// close.
func (o *ownSampler) surgeFrom() {
	o.mu.Lock()
	o.surge = time.Since(o.start)
	o.mu.Unlock()
	o.sample()
	go o.run()
}

// surgeTo marks the overload's end, with a sample.
func (o *ownSampler) surgeTo() {
	o.mu.Lock()
	o.from = time.Since(o.start)
	o.mu.Unlock()
	o.sample()
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
			o.sample()
		}
	}
}

// sample reads every live instance's counts, by its position among the
// members.
func (o *ownSampler) sample() {
	o.f.mu.Lock()
	regs := map[string]*prometheus.Registry{}
	for i, m := range o.f.members {
		if m.live {
			regs[strconv.Itoa(i)] = m.reg
		}
	}
	o.f.mu.Unlock()
	counts := make(map[string]overload.InstanceCounts, len(regs))
	for id, reg := range regs {
		counts[id] = requestCounts(reg)
	}
	o.mu.Lock()
	o.samples = append(o.samples, overload.InstanceSample{At: time.Since(o.start), Counts: counts})
	o.mu.Unlock()
}

// figures are overload.ExcessRecovery of the samples, in seconds (-1:
// not within the run), and overload.BeyondExcessPct and
// overload.PremiumCeilingPct of the overload,
// against each instance's own backend or the shared one.
func (o *ownSampler) figures() (recovery, beyondPct, premiumCeiling float64) {
	capacity := map[string]float64{"": o.f.spec.Scenario.Capacity}
	if o.f.parts.PerInstance {
		capacity = map[string]float64{}
		o.f.mu.Lock()
		for i, m := range o.f.members {
			if m.be != nil {
				capacity[strconv.Itoa(i)] = m.be.Capacity()
			}
		}
		o.f.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.from == 0 {
		return -1, -1, -1
	}
	recovery = -1
	beyondPct = round2(overload.BeyondExcessPct(o.samples, o.surge, o.from, capacity))
	premiumCeiling = round2(overload.PremiumCeilingPct(o.samples, o.surge, o.from, capacity))
	if d := overload.ExcessRecovery(o.samples, o.from, capacity); d >= 0 {
		recovery = roundS(d)
	}
	return recovery, beyondPct, premiumCeiling
}

// round2 is x to two decimals, -1 as it is.
func round2(x float64) float64 {
	if x < 0 {
		return x
	}
	return math.Round(x*100) / 100
}

// close stops the sampling, if it started.
func (o *ownSampler) close() {
	close(o.done)
	o.mu.Lock()
	started := len(o.samples) > 0
	o.mu.Unlock()
	if started {
		<-o.ran
	}
}

// requestCounts is what throttled_requests_total in reg counts: every
// request, those refused for quota, those refused for load (and of them
// by the gate) and those of the premium tier.
func requestCounts(reg prometheus.Gatherer) overload.InstanceCounts {
	var c overload.InstanceCounts
	mfs, err := reg.Gather()
	if err != nil {
		return c
	}
	for _, mf := range mfs {
		if mf.GetName() != "throttled_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue()
			c.Received += v
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() == "tier" && l.GetValue() == "premium":
					c.Premium += v
				case l.GetName() != "reason":
				case l.GetValue() == instrument.ReasonOverQuota:
					c.OverQuota += v
				case l.GetValue() == instrument.ReasonShed || l.GetValue() == instrument.ReasonTierCap:
					c.ForLoad += v
				case l.GetValue() == instrument.ReasonConcurrency:
					c.ForLoad += v
					c.Gated += v
				}
			}
		}
	}
	return c
}
