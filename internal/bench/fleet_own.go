package bench

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// ownEvery is how often ownSampler reads every live instance's requests
// after the overload: the intervals overload.ExcessRecovery judges.
const ownEvery = time.Second

// ownSampler keeps every live instance's throttled_requests_total, read
// from its own registry at the overload's end and every ownEvery after,
// for overload.ExcessRecovery.
type ownSampler struct {
	f    *Fleet
	done chan struct{}
	ran  chan struct{}

	mu      sync.Mutex // guards the fields below
	start   time.Time  // of the run
	from    time.Duration
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

// surgeTo marks the overload's end and samples from then on until close.
func (o *ownSampler) surgeTo() {
	o.mu.Lock()
	o.from = time.Since(o.start)
	o.mu.Unlock()
	o.sample()
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

// recovery is overload.ExcessRecovery of the samples, in seconds (-1:
// not within the run), against each instance's own backend or the shared
// one.
func (o *ownSampler) recovery() float64 {
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
	d := overload.ExcessRecovery(o.samples, o.from, capacity)
	if d < 0 {
		return -1
	}
	return roundS(d)
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
// request, those refused for quota and those refused for load.
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
				case l.GetName() != "reason":
				case l.GetValue() == instrument.ReasonOverQuota:
					c.OverQuota += v
				case l.GetValue() == instrument.ReasonShed || l.GetValue() == instrument.ReasonTierCap ||
					l.GetValue() == instrument.ReasonConcurrency:
					c.ForLoad += v
				}
			}
		}
	}
	return c
}
