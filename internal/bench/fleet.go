package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// Fleet is the fleet scenario's stack (an overload.Fleet): Scenario.Instances
// throttleds on one Redis (or a 3-master cluster), each with its own
// listeners, Redis client and metrics registry, behind an uneven load
// balancer (Scenario.Split). During the overload ⌈N/5⌉ instances join,
// the controller's leader is killed (its Redis connections cut, its
// listeners closed at once: its lease stays until it expires) and later
// ⌈N/5⌉ instances leave (drained and closed, as a scale-down does).
type Fleet struct {
	spec  overload.StackSpec
	parts Parts
	rd    *fleetRedis
	ctx   context.Context
	probe *fleetProbe
	own   *ownSampler // every instance's requests from the overload on, for ExcessRecovery
	cmds  *cmdCounter // every instance's Redis commands

	mu      sync.Mutex // guards the fields below
	members []*member  // every member started, in order; gone ones too
	cur     []float64  // smooth weighted round robin state, by member
	events  []overload.FleetEvent
	start   time.Time
	killed  time.Time

	stop     chan struct{} // closed by Close: ends the timeline
	stopOnce sync.Once
	bg       sync.WaitGroup // the timeline
}

// member is one instance of the fleet.
type member struct {
	in     *instance
	ks     *killSwitch
	rdb    redis.UniversalClient
	reg    *prometheus.Registry
	be     *overload.Backend // per-instance backend; nil when shared
	weight float64
	live   bool
}

// fleetShare is the fraction of the fleet that joins, and later leaves.
const fleetShare = 0.2

// StartFleet starts the fleet's Redis (unless parts.RedisURL), its
// instances, and measures its idle Redis traffic before it returns.
func StartFleet(ctx context.Context, spec overload.StackSpec, parts Parts) (*Fleet, error) {
	redis.SetLogger(quietRedisLog{}) // the killed leader's client retries its dials
	rd, err := startFleetRedis(parts.RedisURL, parts.RedisCluster)
	if err != nil {
		return nil, err
	}
	f := &Fleet{spec: spec, parts: parts, rd: rd, ctx: context.WithoutCancel(ctx),
		cmds: &cmdCounter{n: map[string]int64{}}, stop: make(chan struct{})}
	f.own = newOwnSampler(f)
	for i := range spec.Scenario.Instances {
		if _, err := f.add(spec.Scenario.Split[i]); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("bench fleet: instance %d: %w", i, err)
		}
	}
	if f.probe, err = newFleetProbe(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.probe.idle(ctx, parts.FleetIdle); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// add starts one instance with the balancer's weight w and makes it live.
func (f *Fleet) add(w float64) (*member, error) {
	m := &member{ks: &killSwitch{}, reg: prometheus.NewRegistry(), weight: w}
	spec := f.spec
	if f.parts.PerInstance {
		var err error
		if m.be, err = overload.NewBackend(f.perInstanceBackend()); err != nil {
			return nil, err
		}
		spec.Backend, spec.Handler = m.be.URL(), m.be.Handler()
	}
	var err error
	if m.rdb, err = f.rd.client(m.ks.dial); err != nil {
		m.closeBackend()
		return nil, err
	}
	m.rdb.AddHook(f.cmds)
	redisstore.KeepDialing(m.rdb) // as OpenRedis does
	parts := f.parts
	parts.RedisURL = f.rd.url
	cfg, err := stackConfig(spec, parts, "127.0.0.1:0")
	if err == nil && f.parts.PerInstance {
		cfg.Controller.Scope = "instance" // a sidecar per pod: each instance is cut for its own backend
	}
	if err == nil {
		m.in, err = startInstance(f.ctx, cfg, spec, throttled.Options{Logger: quietLog, Registerer: m.reg, Redis: m.rdb})
	}
	if err != nil {
		_ = m.rdb.Close()
		m.closeBackend()
		return nil, err
	}
	f.mu.Lock()
	m.live = true
	f.members = append(f.members, m)
	f.cur = append(f.cur, 0)
	f.mu.Unlock()
	return m, nil
}

// perInstanceBackend is a backend of capacity C ÷ N: one worker whose
// service time is N ÷ C.
func (f *Fleet) perInstanceBackend() overload.BackendSettings {
	n := float64(f.spec.Scenario.Instances)
	return overload.BackendSettings{Workers: 1, ServiceTime: time.Duration(n / f.spec.Scenario.Capacity * float64(time.Second))}
}

func (m *member) closeBackend() {
	if m.be != nil {
		_ = m.be.Close()
	}
}

// URLs are the fronts of the instances live now.
func (f *Fleet) URLs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.members {
		if m.live {
			out = append(out, m.in.url)
		}
	}
	return out
}

// Pick is the uneven balancer: smooth weighted round robin over the live
// instances.
func (f *Fleet) Pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	best, total := -1, 0.0
	for i, m := range f.members {
		if !m.live {
			continue
		}
		f.cur[i] += m.weight
		total += m.weight
		if best < 0 || f.cur[i] > f.cur[best] {
			best = i
		}
	}
	if best < 0 { // none live: the last one's listener refuses
		return f.members[len(f.members)-1].in.url
	}
	f.cur[best] -= total
	return f.members[best].in.url
}

// Multipliers are the last published multipliers (the probe's pub/sub).
func (f *Fleet) Multipliers() map[string]float64 { return f.probe.multipliers() }

// step is something the fleet does at a time.
type step struct {
	at time.Time
	do func()
}

// timeline runs steps in order, each at its time or as soon as the one
// before it has returned, until Close.
func (f *Fleet) timeline(steps ...step) {
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		for _, s := range steps {
			select {
			case <-f.stop:
				return
			case <-time.After(time.Until(s.at)):
			}
			s.do()
		}
	}()
}

// Begin starts the fleet's timeline in the overload (the middle third of
// d): the probe's surge count from its start, a fifth of the fleet joins
// at 20 % of it, the leader is killed at 45 %, a fifth leaves at 70 %, the
// surge count ends with it. Each event runs to its end before the next:
// one that is late (a loaded host) delays the next, never reorders it.
func (f *Fleet) Begin(start time.Time, d time.Duration) {
	third := d / 3
	k := int(math.Ceil(fleetShare * float64(f.spec.Scenario.Instances)))
	f.mu.Lock()
	f.start = start
	f.mu.Unlock()
	f.probe.begin(start)
	f.own.begin(start)
	at := func(frac float64) time.Time { return start.Add(third + time.Duration(frac*float64(third))) }
	// The probe's counts keep their times whatever the events' delays.
	f.timeline(step{at(0), f.probe.surgeFrom}, step{at(1), f.probe.surgeTo})
	f.timeline(step{at(0), f.own.surgeFrom}, step{at(1), f.own.surgeTo})
	f.timeline(step{at(0.2), func() { f.join(k) }}, step{at(0.45), f.killLeader}, step{at(0.7), func() { f.leave(k) }})
}

// event records what the fleet did now, with the live count after it.
func (f *Fleet) event(what string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	live := 0
	for _, m := range f.members {
		if m.live {
			live++
		}
	}
	f.events = append(f.events, overload.FleetEvent{AtS: roundS(time.Since(f.start)), What: what, N: n, Live: live})
}

func roundS(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

// join starts k instances, each with the median share, in parallel.
func (f *Fleet) join(k int) {
	w := overload.MedianShare(f.spec.Scenario.Split)
	var wg sync.WaitGroup
	var mu sync.Mutex
	joined := 0
	for range k {
		wg.Go(func() {
			if _, err := f.add(w); err == nil {
				mu.Lock()
				joined++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	f.event("join", joined)
}

// killLeader cuts the leading instance's Redis connections, takes it out
// of the balancer and closes its listeners at once; its loops stop after.
func (f *Fleet) killLeader() {
	m := f.leader()
	if m == nil {
		f.event("kill-leader (no leader)", 0)
		return
	}
	m.ks.kill()
	f.mu.Lock()
	m.live = false
	f.killed = time.Now()
	f.mu.Unlock()
	for _, srv := range m.in.srvs {
		_ = srv.Close()
	}
	f.event("kill-leader", 1)
}

// leader is the live member whose controller holds the lease, nil if none.
func (f *Fleet) leader() *member {
	f.mu.Lock()
	ms := append([]*member(nil), f.members...)
	f.mu.Unlock()
	for _, m := range ms {
		if m.live && gaugeValue(m.reg, "throttled_controller_leader") == 1 {
			return m
		}
	}
	return nil
}

// leave drains and closes k live instances that do not lead, from the
// last started of the original fleet backwards.
func (f *Fleet) leave(k int) {
	lead := f.leader()
	f.mu.Lock()
	var going []*member
	for i := min(f.spec.Scenario.Instances, len(f.members)) - 1; i > 0 && len(going) < k; i-- {
		if m := f.members[i]; m.live && m != lead {
			m.live = false
			going = append(going, m)
		}
	}
	f.mu.Unlock()
	f.event("leave", len(going))
	var wg sync.WaitGroup
	for _, m := range going {
		wg.Go(func() { _ = m.in.close() })
	}
	wg.Wait()
}

// BackendCounts sum the per-instance backends' answers.
func (f *Fleet) BackendCounts() overload.BackendCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c overload.BackendCounts
	for _, m := range f.members {
		if m.be != nil {
			b := m.be.Counts()
			c.OK, c.Overloaded, c.Abandoned = c.OK+b.OK, c.Overloaded+b.Overloaded, c.Abandoned+b.Abandoned
		}
	}
	return c
}

// Close stops the events, every instance, the backends and the Redis the
// fleet started.
func (f *Fleet) Close() error {
	f.stopOnce.Do(func() { close(f.stop) })
	f.bg.Wait()
	if f.probe != nil {
		f.probe.close()
	}
	f.own.close()
	f.mu.Lock()
	ms := f.members
	f.members = nil
	f.mu.Unlock()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			errs[i] = m.in.close()
			_ = m.rdb.Close()
			m.closeBackend()
		})
	}
	wg.Wait()
	f.rd.Close()
	return ignoreKilled(errors.Join(errs...))
}

// ignoreKilled drops the errors of the killed leader's Redis client.
func ignoreKilled(err error) error {
	if errors.Is(err, errKilled) {
		return nil
	}
	return err
}

var _ overload.Fleet = (*Fleet)(nil)

// quietRedisLog discards go-redis's own log.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}
