package bench

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/overload"
)

// costSnap is the fleet's Redis commands so far and Redis's CPU.
type costSnap struct {
	at   time.Time
	cmds map[string]int64
	cpu  float64 // seconds, all servers
}

func (p *fleetProbe) snap() costSnap {
	s := costSnap{at: time.Now(), cmds: p.cmds.snapshot()}
	_ = p.f.rd.eachServer(context.Background(), func(c *redis.Client) error {
		s.cpu += RedisCPUSeconds(c)
		return nil
	})
	return s
}

// rates are a's commands per second per instance (n instances) since b,
// by name, their sum, and Redis's CPU in percent of one core.
func rates(b, a costSnap, n int) (by map[string]float64, total, cpuPct float64) {
	secs := a.at.Sub(b.at).Seconds()
	by = map[string]float64{}
	for name, v := range a.cmds {
		if d := float64(v - b.cmds[name]); d > 0 {
			by[name] = math.Round(d/secs/float64(n)*100) / 100
			total += d / secs / float64(n)
		}
	}
	return by, math.Round(total*100) / 100, math.Round((a.cpu-b.cpu)/secs*1000) / 10
}

// defaultIdle is Parts.FleetIdle's default.
const defaultIdle = 4 * time.Second

// idle counts the fleet's Redis traffic and the bench's CPU with no client
// traffic, over window after the instances have run as long (their first
// beats, polls and lease attempts done); nothing if window < 0.
func (p *fleetProbe) idle(ctx context.Context, window time.Duration) error {
	if window < 0 {
		return nil
	}
	window = cmp.Or(window, defaultIdle)
	var cpu0 time.Duration
	for i := range 2 {
		if i == 1 {
			p.from, cpu0 = p.snap(), overload.CPUTime()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
	}
	to, cpu1 := p.snap(), overload.CPUTime()
	by, total, rcpu := rates(p.from, to, p.f.spec.Scenario.Instances)
	p.mu.Lock()
	p.cost.IdleByCommand, p.cost.IdleCmdsPerInstance, p.cost.IdleRedisCPUPct = by, total, rcpu
	p.cost.IdleBenchCPUCores = math.Round((cpu1-cpu0).Seconds()/to.at.Sub(p.from.at).Seconds()*100) / 100
	p.mu.Unlock()
	return nil
}

// shedSnap is one instance's requests so far and its backend's 503s.
type shedSnap struct{ sent, shed, gated, over float64 }

func (p *fleetProbe) sheds() map[*member]shedSnap {
	p.f.mu.Lock()
	ms := slices.Clone(p.f.members)
	p.f.mu.Unlock()
	out := map[*member]shedSnap{}
	for _, m := range ms {
		c := requestCounts(m.reg)
		s := shedSnap{sent: c.Received, shed: c.ForLoad - c.Gated, gated: c.Gated}
		if m.be != nil {
			s.over = float64(m.be.Counts().Overloaded)
		}
		out[m] = s
	}
	return out
}

// surgeFrom marks the overload's start.
func (p *fleetProbe) surgeFrom() {
	from, sh := p.snap(), p.sheds()
	p.mu.Lock()
	p.from, p.shed0 = from, sh
	p.mu.Unlock()
}

// surgeTo marks the overload's end: the surge's traffic, the coordination
// keys' memory and, with per-instance backends, the shedding of the
// instances whose backend stayed fine.
func (p *fleetProbe) surgeTo() {
	to, sh := p.snap(), p.sheds()
	mem := p.coordMemory()
	p.mu.Lock()
	defer p.mu.Unlock()
	_, p.cost.SurgeCmdsPerInstance, p.cost.SurgeRedisCPUPct = rates(p.from, to, p.f.spec.Scenario.Instances)
	p.cost.CoordKeyBytes = mem
	if !p.f.parts.PerInstance {
		return
	}
	for m, s := range sh {
		s0 := p.shed0[m]
		if s.over > s0.over {
			p.fine[1]++
			continue
		}
		p.fine[0]++
		p.fineReq[0] += s.shed - s0.shed
		p.fineReq[1] += s.sent - s0.sent
		p.fineReq[2] += s.gated - s0.gated
	}
}

// coordKeys are the names of the coordination's keys (default prefix):
// heartbeats, tally, multipliers, the leader lease and its fence.
var coordKeys = []string{"instances", "tally", "multipliers"}

// coordMemory is MEMORY USAGE of every coordination key on every server.
func (p *fleetProbe) coordMemory() map[string]int64 {
	out := map[string]int64{}
	ctx := context.Background()
	_ = p.f.rd.eachServer(ctx, func(c *redis.Client) error {
		iter := c.Scan(ctx, 0, "*throttled:*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			for _, ck := range coordKeys {
				if strings.Contains(k, ck) {
					out[k] += c.MemoryUsage(ctx, k).Val()
					break
				}
			}
		}
		return nil
	})
	return out
}

// report is the fleet's figures once the run is over.
func (p *fleetProbe) report(rep *overload.Report) *overload.FleetReport {
	p.checks.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.f
	f.mu.Lock()
	events, killed := slices.Clone(f.events), f.killed
	f.mu.Unlock()
	fr := &overload.FleetReport{Instances: f.spec.Scenario.Instances, Backend: "shared", Redis: "single",
		Skew:   math.Round(slices.Max(f.spec.Scenario.Split)/overload.MedianShare(f.spec.Scenario.Split)*10) / 10,
		Events: events, LeaderGapS: -1, Publishes: len(p.prop), PeriodMS: 1000, Cost: p.cost, FineShedPct: -1, FineGatedPct: -1,
		CPUCoreShare: math.Round(rep.CPUSeconds/float64(len(rep.Rows))*100) / 100}
	if f.parts.PerInstance {
		fr.Backend = "per-instance"
		fr.FineInst, fr.HotInst = p.fine[0], p.fine[1]
		if p.fineReq[1] > 0 {
			fr.FineShedPct = math.Round(100*p.fineReq[0]/p.fineReq[1]*100) / 100
			fr.FineGatedPct = math.Round(100*p.fineReq[2]/p.fineReq[1]*100) / 100
		}
	}
	if f.rd.url == "" {
		fr.Redis = "cluster"
	}
	if !p.firstAt.IsZero() {
		fr.LeaderGapS = roundS(p.firstAt.Sub(killed))
	}
	if len(p.prop) > 0 {
		ps := slices.Sorted(slices.Values(p.prop))
		fr.PropagationP99MS = ms1(ps[int(math.Ceil(0.99*float64(len(ps))))-1])
		fr.PropagationMaxMS = ms1(ps[len(ps)-1])
	}
	fr.Caps = overload.TierCaps(rep.Rows, p.caps, map[string]string{"premium": "premium", "free": "free", "greedy": "free"})
	return fr
}

func ms1(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }

// FleetReport is the fleet's figures for the run's report.
func (f *Fleet) FleetReport(rep *overload.Report) *overload.FleetReport {
	fr := f.probe.report(rep)
	fr.ExcessRecoveryS, fr.BeyondExcessPct, fr.PremiumCeilingPct = f.own.figures()
	return fr
}
