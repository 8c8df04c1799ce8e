package controller

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

const metricsHeader = `
# HELP throttled_controller_leader 1 while this controller replica holds the leader lease, else 0.
# TYPE throttled_controller_leader gauge
# HELP throttled_controller_signal_ratio Last usable value of each health signal; absent while the signal is unusable (ratio).
# TYPE throttled_controller_signal_ratio gauge
# HELP throttled_controller_signal_seconds Last usable value of each health signal; absent while the signal is unusable (seconds).
# TYPE throttled_controller_signal_seconds gauge
# HELP throttled_controller_signal_target_ratio Target of each health signal read: overloaded above it (ratio).
# TYPE throttled_controller_signal_target_ratio gauge
# HELP throttled_controller_signal_target_seconds Target of each health signal read: overloaded above it (seconds).
# TYPE throttled_controller_signal_target_seconds gauge
# HELP throttled_tier_multiplier Rate multiplier the controller publishes for each tier (exported by the leader only).
# TYPE throttled_tier_multiplier gauge
`

// stepsText renders throttled_controller_steps_total with the given non-zero
// counts ("tier/action" → count); every other tier × action is 0.
func stepsText(counts map[string]int) string {
	var b strings.Builder
	b.WriteString("# HELP throttled_controller_steps_total Published control steps, by tier and the action taken on it.\n")
	b.WriteString("# TYPE throttled_controller_steps_total counter\n")
	for _, tier := range []string{"free", "premium", "standard"} {
		for _, a := range []string{"decrease", "hold", "increase", "recover"} {
			b.WriteString(`throttled_controller_steps_total{action="` + a + `",tier="` + tier + `"} `)
			b.WriteString(strconv.Itoa(counts[tier+"/"+a]) + "\n")
		}
	}
	return b.String()
}

func TestLoopMetrics(t *testing.T) {
	h := newHarness(4)
	h.src.read = func(tick int, now time.Time) (Input, error) {
		lat := Signal{Name: "latency_p99", Value: 2, Target: 1, Valid: true, At: now}
		errs := Signal{Name: "error_ratio", Value: math.NaN(), Target: 0.01, Valid: true, At: now}
		if tick >= 1 {
			lat.Valid = false
			errs.Value = 0.0095
		}
		return Input{Signals: []Signal{lat, errs}}, nil
	}
	h.lease.renew = func(tick int) (bool, error) { return tick < 2, nil }
	h.lease.acquire = func(tick int) (bool, error) { return tick == 0, nil }
	names := []string{"throttled_controller_leader", "throttled_controller_signal_seconds", "throttled_controller_signal_ratio",
		"throttled_controller_signal_target_seconds", "throttled_controller_signal_target_ratio",
		"throttled_tier_multiplier", "throttled_controller_steps_total"}
	want := map[int]string{
		// Leader, overloaded by latency; error_ratio NaN has no value
		// series; each signal is in its unit, with its target.
		0: metricsHeader + `
throttled_controller_leader 1
throttled_controller_signal_seconds{signal="latency_p99"} 2
throttled_controller_signal_target_ratio{signal="error_ratio"} 0.01
throttled_controller_signal_target_seconds{signal="latency_p99"} 1
throttled_tier_multiplier{tier="free"} 0.5
throttled_tier_multiplier{tier="premium"} 1
throttled_tier_multiplier{tier="standard"} 1
` + stepsText(map[string]int{"free/decrease": 1, "premium/hold": 1, "standard/hold": 1}),
		// Latency no longer valid: its series goes (its target stays: it is
		// read); error_ratio (band) appears.
		1: metricsHeader + `
throttled_controller_leader 1
throttled_controller_signal_ratio{signal="error_ratio"} 0.0095
throttled_controller_signal_target_ratio{signal="error_ratio"} 0.01
throttled_controller_signal_target_seconds{signal="latency_p99"} 1
throttled_tier_multiplier{tier="free"} 0.5
throttled_tier_multiplier{tier="premium"} 1
throttled_tier_multiplier{tier="standard"} 1
` + stepsText(map[string]int{"free/decrease": 1, "free/hold": 1, "premium/hold": 2, "standard/hold": 2}),
		// Lease lost: no multipliers, no more steps counted.
		2: metricsHeader + `
throttled_controller_leader 0
throttled_controller_signal_ratio{signal="error_ratio"} 0.0095
throttled_controller_signal_target_ratio{signal="error_ratio"} 0.01
throttled_controller_signal_target_seconds{signal="latency_p99"} 1
` + stepsText(map[string]int{"free/decrease": 1, "free/hold": 1, "premium/hold": 2, "standard/hold": 2}),
	}
	checked := 0
	h.clock.after = func(tick int) {
		if w, ok := want[tick]; ok {
			checked++
			if err := testutil.GatherAndCompare(h.reg, strings.NewReader(w), names...); err != nil {
				t.Errorf("after tick %d: %v", tick, err)
			}
		}
	}
	h.run(t, h.loop(t, nil))
	if checked != len(want) {
		t.Fatalf("checked %d ticks, want %d", checked, len(want))
	}
}

func TestLoopMetricsReleaseResetsLeader(t *testing.T) {
	h := newHarness(1)
	h.run(t, h.loop(t, nil))
	want := metricsHeader + "throttled_controller_leader 0\n"
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want),
		"throttled_controller_leader", "throttled_tier_multiplier"); err != nil {
		t.Fatal(err)
	}
}

func TestNewLoopRefusesDuplicateRegistration(t *testing.T) {
	h := newHarness(1)
	h.loop(t, nil)
	_, err := NewLoop(mustLaw(t, threeTiers()), h.src, h.pub, h.lease, h.reg)
	if err == nil || !strings.HasPrefix(err.Error(), "controller: registering metrics") {
		t.Fatalf("second loop on one registry: %v", err)
	}
}

// TestLoopMetricsCPUWait: throttled_controller_cpu_wait_ratio shows each
// step's Input.CPUWait, so an operator sees why an overload held instead
// of cutting (at StarvedAt, 0.25, or above).
func TestLoopMetricsCPUWait(t *testing.T) {
	h := newHarness(3)
	waits := []float64{0, 0.4, 0.1}
	h.src.read = func(tick int, now time.Time) (Input, error) {
		lat := Signal{Name: "latency_p99", Value: 2, Target: 1, Valid: true, At: now}
		return Input{Signals: []Signal{lat}, CPUWait: waits[tick]}, nil
	}
	const header = "# HELP throttled_controller_cpu_wait_ratio How much more of its runnable time this process waited for a CPU over the last period than it usually does; at 0.25 or above (the law's StarvedAt) an overload holds instead of cutting.\n" +
		"# TYPE throttled_controller_cpu_wait_ratio gauge\n"
	checked := 0
	h.clock.after = func(tick int) {
		want := header + "throttled_controller_cpu_wait_ratio " + strconv.FormatFloat(waits[tick], 'g', -1, 64) + "\n"
		if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "throttled_controller_cpu_wait_ratio"); err != nil {
			t.Errorf("after tick %d: %v", tick, err)
		}
		checked++
	}
	h.run(t, h.loop(t, nil))
	if checked != len(waits) {
		t.Fatalf("checked %d ticks, want %d", checked, len(waits))
	}
}
