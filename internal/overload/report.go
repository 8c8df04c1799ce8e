package overload

import (
	"fmt"
	"math"
	"time"
)

// Report is the outcome of one scenario in one mode; its JSON is one line
// of `throttled bench overload --json`. Figures are rounded: ratios to
// 3 decimals, percentages, flips and CPU to 2, milliseconds and seconds to 1.
type Report struct {
	Scenario    string  `json:"scenario"`
	Mode        string  `json:"mode"`
	Front       string  `json:"front"`        // where the clients meet throttled (Front)
	CapacityRPS float64 `json:"capacity_rps"` // the backend's nominal capacity
	TargetMS    float64 `json:"target_ms"`    // the latency target
	Phases      Phases  `json:"phases"`
	// SettleS is the time from the overload's start until the p99 of every
	// later second of the overload is within the target; 0: from the first
	// second; -1: not even in its last second.
	SettleS float64 `json:"settle_s"`
	// LowestGoodputRatio is the lowest goodput of one second of the
	// overload, its first second excepted, over that second's capacity.
	LowestGoodputRatio float64 `json:"lowest_goodput_ratio"`
	// RecoveryS is the time from the overload's end until every
	// multiplier is back at 1 for the rest of the run: 0 if they were at 1
	// already (or never below), -1 if some multiplier was still below 1
	// at the end.
	RecoveryS float64 `json:"recovery_s"`
	// AfterShedLate counts the requests shed (by a multiplier, a tier cap
	// or the inner loop's gate) in the after phase from its third second
	// on: with the overload over, the controller has had two seconds to
	// release, and any shed from then on is a healthy backend shed.
	AfterShedLate int64 `json:"after_shed_late"`
	// FlipsPerMin counts the direction changes of the multipliers (summed
	// over tiers) in the second half of each phase, per minute of those halves.
	FlipsPerMin float64 `json:"flips_per_min"`
	// CPUSeconds is this process's user and system CPU over the run
	// (backend, clients and an in-process stack together).
	CPUSeconds float64 `json:"cpu_seconds"`
	// Fleet holds a Fleet stack's own figures (the fleet scenario).
	Fleet *FleetReport `json:"fleet,omitempty"`

	// Rows are the run's seconds; Totals sums them by load name.
	Rows   []Row             `json:"-"`
	Totals map[string]Counts `json:"-"`
}

// Phases are the figures of each phase.
type Phases struct {
	Before PhaseReport `json:"before"`
	During PhaseReport `json:"overload"`
	After  PhaseReport `json:"after"`
}

// PhaseReport sums one phase.
type PhaseReport struct {
	// GoodputRatio is the 2xx answered within the target per second over
	// the backend's capacity in the phase (all loads, the greedy key's too).
	GoodputRatio float64 `json:"goodput_ratio"`
	// PremiumAdmittedPct and FreeAdmittedPct are 2xx ÷ sent (dropped
	// requests count as sent) of the premium and free loads; 100 when none
	// was sent.
	PremiumAdmittedPct float64 `json:"premium_admitted_pct"`
	FreeAdmittedPct    float64 `json:"free_admitted_pct"`
	// P99MS is the p99 latency of the phase's 2xx (all loads), within 3.1 %
	// above; 0 without any 2xx.
	P99MS  float64 `json:"p99_ms"`
	Status Status  `json:"status"`
}

// Status counts the refusals of a phase, all loads together.
type Status struct {
	Backend503 int64 `json:"backend_503"`
	Shed       int64 `json:"shed"`
	OverQuota  int64 `json:"over_quota"`
	Breaker    int64 `json:"breaker"`
	Bulkhead   int64 `json:"bulkhead"`
}

// Headline is the report's figures in one line: the text output of
// `throttled bench overload`, and the end of the demo's summary. The name
// is scenario/mode, and /front when the front is not the proxy.
func (r Report) Headline() string {
	o := r.Phases.During
	settle, recovery := fmt.Sprintf("%.0f s", r.SettleS), fmt.Sprintf("%.1f s", r.RecoveryS)
	if r.SettleS < 0 {
		settle = "never"
	}
	if r.RecoveryS < 0 {
		recovery = "not within the run"
	}
	name := r.Scenario + "/" + r.Mode
	if r.Front != Proxy.String() {
		name += "/" + r.Front // proxy, the default, as before fronts
	}
	return fmt.Sprintf("%s: premium admitted %.1f%%, free admitted %.1f%%, goodput %.2f·C (lowest 1 s %.2f·C), "+
		"p99 %.0f ms (target %.0f), settle %s, recovery %s, %.1f flips/min, 503 backend %d / shed %d, CPU %.1f s",
		name, o.PremiumAdmittedPct, o.FreeAdmittedPct, o.GoodputRatio, r.LowestGoodputRatio,
		o.P99MS, r.TargetMS, settle, recovery, r.FlipsPerMin, o.Status.Backend503, o.Status.Shed, r.CPUSeconds)
}

// summarize computes the report's figures (all but the CPU) from the rows,
// laid out by l, and the multiplier change points.
func summarize(sc Scenario, mode Mode, target time.Duration, l layout, rows []Row, samples []sample) Report {
	r := Report{Scenario: sc.Name, Mode: mode.String(), CapacityRPS: round(sc.Capacity, 2),
		TargetMS: round(ms(target), 1), Rows: rows, Totals: map[string]Counts{}}
	for i := range rows {
		for name, c := range rows[i].Loads {
			t := r.Totals[name]
			t.Add(c)
			r.Totals[name] = t
		}
	}
	for p, pr := range []*PhaseReport{&r.Phases.Before, &r.Phases.During, &r.Phases.After} {
		*pr = phaseReport(rows, Phase(p))
	}
	r.SettleS = settle(rows, l)
	r.AfterShedLate = shedFrom(rows, l.start(After)+afterGrace)
	r.LowestGoodputRatio = round(lowestGoodput(rows, l), 3)
	r.RecoveryS = -1 // still below 1 when the run ended
	if d := recovery(samples, time.Duration(l.end(During))*time.Second); d >= 0 {
		r.RecoveryS = round(d.Seconds(), 1)
	}
	var n int
	var window time.Duration
	for p := range NumPhases {
		from, to := l.start(p), l.end(p)
		half := time.Duration(to-from) * time.Second / 2
		n += flips(samples, time.Duration(to)*time.Second-half, time.Duration(to)*time.Second)
		window += half
	}
	if window > 0 {
		r.FlipsPerMin = round(float64(n)/window.Minutes(), 2)
	}
	return r
}

func phaseReport(rows []Row, p Phase) PhaseReport {
	var all, premium, free Counts
	var capacity float64
	for i := range rows {
		if rows[i].Phase != p {
			continue
		}
		capacity += rows[i].Capacity
		for name, c := range rows[i].Loads {
			all.Add(c)
			switch name {
			case "premium":
				premium.Add(c)
			case "free":
				free.Add(c)
			}
		}
	}
	pr := PhaseReport{PremiumAdmittedPct: admitted(&premium), FreeAdmittedPct: admitted(&free),
		P99MS: round(ms(all.Latency.Quantile(0.99)), 1),
		Status: Status{Backend503: all.Class[Backend503], Shed: all.Class[Shed] + all.Class[Capped] + all.Class[Gated], OverQuota: all.Class[OverQuota],
			Breaker: all.Class[Breaker], Bulkhead: all.Class[Bulkhead]}}
	if capacity > 0 {
		pr.GoodputRatio = round(float64(all.WithinTarget)/capacity, 3)
	}
	return pr
}

func admitted(c *Counts) float64 {
	if c.Sent() == 0 {
		return 100
	}
	return round(100*float64(c.Class[OK])/float64(c.Sent()), 2)
}

// afterGrace is how many of the after phase's first seconds AfterShedLate
// leaves out.
const afterGrace = 2

// shedFrom sums the shed, capped and gated requests of rows from the
// first'th on.
func shedFrom(rows []Row, first int) int64 {
	var n int64
	for k := max(first, 0); k < len(rows); k++ {
		t := rows[k].Total()
		n += t.Class[Shed] + t.Class[Capped] + t.Class[Gated]
	}
	return n
}

// settle is in whole seconds: the overload seconds before the first one
// from which every second's p99 is within the target.
func settle(rows []Row, l layout) float64 {
	from, to := l.start(During), min(l.end(During), len(rows))
	k := to
	for k > from {
		t := rows[k-1].Total()
		if !withinTargetP99(&t) {
			break
		}
		k--
	}
	if k == to {
		return -1
	}
	return float64(k - from)
}

// lowestGoodput is over the overload's seconds but its first (its only
// one, if it has one); 0 without any.
func lowestGoodput(rows []Row, l layout) float64 {
	from, to := l.start(During), min(l.end(During), len(rows))
	if to-from > 1 {
		from++
	}
	low := math.Inf(1)
	for k := from; k < to; k++ {
		t := rows[k].Total()
		low = min(low, float64(t.WithinTarget)/rows[k].Capacity)
	}
	if math.IsInf(low, 1) {
		return 0
	}
	return low
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round(x float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(x*p) / p
}
