package bench

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/overload"
)

// fleetProbe watches a fleet without adding to its Redis traffic: it reads
// the published multipliers from their pub/sub channel (the caps, and the
// time of each publish), the instances' own registries for when each
// received them, and counts every instance's Redis commands in their
// clients (cmdCounter).
type fleetProbe struct {
	f    *Fleet
	sub  *redis.PubSub
	subc redis.UniversalClient
	cmds *cmdCounter
	done chan struct{}
	// listened is closed when listen has returned; close waits for it
	// before checks.Wait, so that no checks.Add can race with the Wait.
	listened chan struct{}
	checks   sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	start   time.Time
	last    map[string]float64
	caps    []overload.CapSample
	prop    []time.Duration
	firstAt time.Time // first publish after the leader's kill
	cost    overload.FleetCost
	from    costSnap
	shed0   map[*member]shedSnap
	fine    [2]int     // instances whose backend stayed fine, and hot ones
	fineReq [3]float64 // the fine ones' requests: shed by the multipliers or caps, all, gated
}

// multMessage is the multipliers' pub/sub message (coord's).
type multMessage struct {
	At    int64              `json:"at"` // unix ms
	Tiers map[string]float64 `json:"tiers"`
	Rates map[string]float64 `json:"rates"`
}

func newFleetProbe(f *Fleet) (*fleetProbe, error) {
	p := &fleetProbe{f: f, cmds: f.cmds, done: make(chan struct{}), listened: make(chan struct{})}
	var err error
	if p.subc, err = f.rd.client(nil); err != nil {
		return nil, err
	}
	p.sub = p.subc.Subscribe(context.Background(), "throttled:multipliers")
	if _, err := p.sub.Receive(context.Background()); err != nil {
		_ = p.subc.Close()
		return nil, err
	}
	go p.listen()
	return p, nil
}

// listen records every published set until close.
func (p *fleetProbe) listen() {
	defer close(p.listened)
	ch := p.sub.Channel()
	for {
		var msg *redis.Message
		select {
		case <-p.done: // the channel is not always closed with the PubSub
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			msg = m
		}
		var mm multMessage
		if json.Unmarshal([]byte(msg.Payload), &mm) != nil || mm.At <= 0 {
			continue
		}
		at := time.UnixMilli(mm.At)
		p.mu.Lock()
		p.last = mm.Tiers
		if !p.start.IsZero() {
			p.caps = append(p.caps, overload.CapSample{At: at.Sub(p.start), Rates: mm.Rates})
		}
		p.f.mu.Lock()
		killed := p.f.killed
		p.f.mu.Unlock()
		if !killed.IsZero() && p.firstAt.IsZero() && at.After(killed) {
			p.firstAt = at
		}
		p.mu.Unlock()
		p.checks.Add(1)
		go func() { defer p.checks.Done(); p.propagation(at) }()
	}
}

// propagation records how long after at every live instance had received
// a set published at at (or later), checking every 10 ms for up to 3 s.
func (p *fleetProbe) propagation(at time.Time) {
	p.f.mu.Lock()
	var ms []*member
	for _, m := range p.f.members {
		if m.live {
			ms = append(ms, m)
		}
	}
	p.f.mu.Unlock()
	var worst time.Duration
	deadline := time.Now().Add(3 * time.Second)
	for len(ms) > 0 && time.Now().Before(deadline) {
		select { // the instances' own deliveries: at most 10 ms late
		case <-p.done:
			return
		case <-time.After(10 * time.Millisecond):
		}
		ms = slices.DeleteFunc(ms, func(m *member) bool {
			now := time.Now()
			age := gaugeValue(m.reg, "throttled_multiplier_age_seconds")
			if math.IsNaN(age) || math.IsInf(age, 0) {
				return false
			}
			got := now.Add(-time.Duration(age * float64(time.Second)))
			if got.Before(at.Add(-time.Millisecond)) { // the ms of the timestamp
				return false
			}
			worst = max(worst, got.Sub(at))
			return true
		})
	}
	if len(ms) > 0 {
		worst = max(worst, time.Since(at))
	}
	p.mu.Lock()
	p.prop = append(p.prop, worst)
	p.mu.Unlock()
}

func (p *fleetProbe) multipliers() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.last)
}

func (p *fleetProbe) begin(start time.Time) {
	p.mu.Lock()
	p.start = start
	p.mu.Unlock()
}

func (p *fleetProbe) close() {
	close(p.done)
	<-p.listened
	_ = p.sub.Close()
	p.checks.Wait()
	_ = p.subc.Close()
}

// gaugeValue is the first series of the gauge name in reg; NaN if none.
func gaugeValue(reg prometheus.Gatherer, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return math.NaN()
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return math.NaN()
}

// cmdCounter is a go-redis hook that counts the commands its clients send,
// by name (pipelined ones one by one).
type cmdCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *cmdCounter) add(cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	c.mu.Lock()
	c.n[name]++
	c.mu.Unlock()
}

func (c *cmdCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}
