package overload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// FleetReport is what a Fleet stack adds to a run's report.
type FleetReport struct {
	Instances int    `json:"instances"` // at the start
	Backend   string `json:"backend"`   // "shared" or "per-instance"
	Redis     string `json:"redis"`     // "single" or "cluster"
	// Skew is the busiest instance's share over the median share.
	Skew   float64      `json:"skew"`
	Events []FleetEvent `json:"events"`
	// LeaderGapS is the time from the leader's kill until a new leader's
	// first publish; -1 if none came.
	LeaderGapS float64 `json:"leader_gap_s"`
	// Propagation is from a publish (its timestamp) until every live
	// instance had received it, over the run's publishes.
	PropagationP99MS float64 `json:"propagation_p99_ms"`
	PropagationMaxMS float64 `json:"propagation_max_ms"`
	Publishes        int     `json:"publishes"`
	PeriodMS         float64 `json:"period_ms"`
	// ExcessRecoveryS is the time from the overload's end until throttled
	// refuses for load no more than each backend's excess over its
	// capacity (and 10 % of that capacity): ExcessRecovery; -1 if not
	// within the run. With per-instance backends the instances whose base
	// load exceeds their own backend refuse that excess after the overload
	// too, so Report's RecoveryS (every multiplier at 1) is never within a
	// run there.
	ExcessRecoveryS float64 `json:"excess_recovery_s"`
	// BeyondExcessPct is, of the requests sent in the overload, the
	// percentage refused for load beyond their backend's excess over its
	// capacity (and 10 % of that capacity): BeyondExcessPct; -1 if not
	// measured. With per-instance backends, what instances were shed for
	// another's hot backend rather than their own.
	BeyondExcessPct float64 `json:"beyond_excess_pct"`
	// PremiumCeilingPct is the most of the premium requests sent in the
	// overload the backends could have served (PremiumCeilingPct): below
	// 100 with per-instance backends when a busy instance's premium alone
	// exceeds its own backend; -1 if not measured.
	PremiumCeilingPct float64 `json:"premium_ceiling_pct"`
	// Caps compares each capped tier's admitted rate with its cap.
	Caps []TierCap `json:"caps,omitempty"`
	// FineShedPct, per-instance backends only: of the requests sent in the
	// overload to instances whose own backend stayed fine (its backend answered
	// no 503 and its 2xx p99 stayed within the target), the percentage
	// throttled shed by the fleet's multipliers or tier caps, and by the
	// instance's own inner loop (gated); -1 when not measured.
	FineShedPct  float64 `json:"fine_shed_pct"`
	FineGatedPct float64 `json:"fine_gated_pct"`
	FineInst     int     `json:"fine_instances"`
	HotInst      int     `json:"hot_instances"`
	// Cost is the Redis traffic of the fleet.
	Cost FleetCost `json:"cost"`
	// CPUCoreShare is the bench process's CPU seconds per wall second over
	// the run: on 2 cores, near 2 means the run measured CPU starvation.
	CPUCoreShare float64 `json:"cpu_core_share"`
}

// FleetEvent is something the stack did to the fleet during the run.
type FleetEvent struct {
	AtS  float64 `json:"at_s"`
	What string  `json:"what"` // "join", "leave", "kill-leader"
	N    int     `json:"n"`    // instances concerned
	Live int     `json:"live"` // live instances afterwards
}

// FleetCost is the Redis traffic of the fleet: commands per second per
// live instance with no client traffic (Idle) and over the overload phase
// (Surge), what Redis spent, and the memory of the coordination keys.
type FleetCost struct {
	IdleCmdsPerInstance  float64            `json:"idle_cmds_per_s_per_instance"`
	SurgeCmdsPerInstance float64            `json:"surge_cmds_per_s_per_instance"`
	IdleByCommand        map[string]float64 `json:"idle_by_command"` // per second per instance
	IdleRedisCPUPct      float64            `json:"idle_redis_cpu_pct"`
	IdleBenchCPUCores    float64            `json:"idle_bench_cpu_cores"` // the bench process, idle instances only
	SurgeRedisCPUPct     float64            `json:"surge_redis_cpu_pct"`
	CoordKeyBytes        map[string]int64   `json:"coord_key_bytes"` // MEMORY USAGE by key
}

// TierCap is one tier's admitted rate against the cap the controller set,
// over the overload's seconds (its first excepted) in which it had one.
type TierCap struct {
	Tier    string  `json:"tier"`
	Seconds int     `json:"seconds"`        // overload seconds with a cap
	Within  int     `json:"within_10pct"`   // of those, admitted within ±10 % of the cap
	Median  float64 `json:"median_ratio"`   // median admitted ÷ cap
	Highest float64 `json:"highest_ratio"`  // most admitted ÷ cap
	CapRPS  float64 `json:"median_cap_rps"` // median cap
}

// CapSample is the caps (tier → req/s) in effect from At (since the run's
// start) on.
type CapSample struct {
	At    time.Duration
	Rates map[string]float64
}

// TierCaps compares, for every overload second but the first, each tier's
// admitted requests (2xx and backend 503s of its loads; tierOf maps a load
// to its tier) with the cap in effect at the second's end.
func TierCaps(rows []Row, caps []CapSample, tierOf map[string]string) []TierCap {
	ratios := map[string][]float64{}
	capsOf := map[string][]float64{}
	first := -1
	for _, r := range rows {
		if r.Phase != During {
			continue
		}
		if first < 0 {
			first = r.Second
			continue
		}
		rates := capAt(caps, time.Duration(r.Second+1)*time.Second)
		adm := map[string]float64{}
		for name, c := range r.Loads {
			adm[tierOf[name]] += float64(c.Class[OK] + c.Class[Backend503])
		}
		for tier, cp := range rates {
			if cp > 0 {
				ratios[tier] = append(ratios[tier], adm[tier]/cp)
				capsOf[tier] = append(capsOf[tier], cp)
			}
		}
	}
	var out []TierCap
	for _, tier := range slices.Sorted(maps.Keys(ratios)) {
		rs := ratios[tier]
		tc := TierCap{Tier: tier, Seconds: len(rs), Median: round(MedianShare(rs), 3),
			Highest: round(slices.Max(rs), 3), CapRPS: round(MedianShare(capsOf[tier]), 1)}
		for _, x := range rs {
			if x >= 0.9 && x <= 1.1 {
				tc.Within++
			}
		}
		out = append(out, tc)
	}
	return out
}

func capAt(caps []CapSample, at time.Duration) map[string]float64 {
	var cur map[string]float64
	for _, c := range caps {
		if c.At > at {
			break
		}
		cur = c.Rates
	}
	return cur
}

// Line is the fleet's figures in one line, after the report's Headline.
func (f *FleetReport) Line() string {
	var caps []string
	for _, c := range f.Caps {
		caps = append(caps, fmt.Sprintf("%s %d/%d s within 10 %% (median %.2f, cap %.0f/s)", c.Tier, c.Within, c.Seconds, c.Median, c.CapRPS))
	}
	var ev []string
	for _, e := range f.Events {
		ev = append(ev, fmt.Sprintf("%s %d at %.0f s → %d", e.What, e.N, e.AtS, e.Live))
	}
	fine := "n/a"
	if f.FineShedPct >= 0 {
		fine = fmt.Sprintf("%.1f%% of %d fine instances' requests shed by the fleet, %.1f%% gated (%d hot)",
			f.FineShedPct, f.FineInst, f.FineGatedPct, f.HotInst)
	}
	recovered := "not within the run"
	if f.ExcessRecoveryS >= 0 {
		recovered = fmt.Sprintf("%.1f s", f.ExcessRecoveryS)
	}
	return fmt.Sprintf("  fleet: %d instances, backend %s, redis %s, skew %.1f×; %s; new leader after %.1f s; refusing only the backends' excess after %s (beyond it in the overload %.1f%%); premium servable at most %.1f%%; "+
		"propagation p99 %.0f ms (max %.0f, %d publishes, period %.0f ms); caps: %s; fine instances: %s; "+
		"redis cmds/s/instance idle %.1f surge %.1f, redis CPU idle %.1f%% surge %.1f%%; bench CPU idle %.2f, run %.2f cores",
		f.Instances, f.Backend, f.Redis, f.Skew, strings.Join(ev, ", "), f.LeaderGapS, recovered, f.BeyondExcessPct, f.PremiumCeilingPct,
		f.PropagationP99MS, f.PropagationMaxMS, f.Publishes, f.PeriodMS, strings.Join(caps, "; "), fine,
		f.Cost.IdleCmdsPerInstance, f.Cost.SurgeCmdsPerInstance, f.Cost.IdleRedisCPUPct, f.Cost.SurgeRedisCPUPct, f.Cost.IdleBenchCPUCores, f.CPUCoreShare)
}
