package controller

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/throttledhq/throttled/signals"
)

// fakeGate answers TakeWindow from a script (call i gets windows[i], an
// empty window past its end) and logs every SetLimit.
type fakeGate struct {
	windows []Window
	takes   int
	limits  []int
}

func (g *fakeGate) TakeWindow() (int, time.Duration, time.Duration, int) {
	var w Window
	if g.takes < len(g.windows) {
		w = g.windows[g.takes]
	}
	g.takes++
	return w.Samples, w.Avg, w.Min, w.MaxInFlight
}

func (g *fakeGate) SetLimit(n int) { g.limits = append(g.limits, n) }

func newConcurrencyHarness(t *testing.T, ticks int, gate Gate, reg prometheus.Registerer, opts ...ConcurrencyOption) (*ConcurrencyLoop, *fakeClock, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &fakeClock{now: t0, ticks: ticks, cancel: cancel}
	l, err := NewConcurrencyLoop("upstream", mustGradient(t, GradientSettings{MaxLimit: 40}), gate, reg, c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l, c, ctx
}

// TestConcurrencyLoopSetsLimitEveryInterval: the loop sets the initial
// limit, drops the window from before it ran, then every 100 ms steps the
// law on the gate's window and sets the gate to the rounded limit.
func TestConcurrencyLoopSetsLimitEveryInterval(t *testing.T) {
	gate := &fakeGate{windows: []Window{
		win(1000, 5*time.Second, 1000), // before Run: dropped
		win(10, 20*ms, 20),             // t1: 23
		win(10, 40*ms, 23),             // t2: 19.1875
		{},                             // t3: hold
		win(10, 80*ms, 19),             // t4: 14.89…
	}}
	l, c, ctx := newConcurrencyHarness(t, 5, gate, nil)
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []int{20, 23, 19, 19, 15}; !slices.Equal(gate.limits, want) {
		t.Errorf("SetLimit calls %v, want %v", gate.limits, want)
	}
	if want := slices.Repeat([]time.Duration{100 * ms}, 5); !slices.Equal(c.sleeps, want) {
		t.Errorf("sleeps %v, want %v", c.sleeps, want)
	}
	st := l.State()
	if st.LastAction != ActionDecrease || !st.At.Equal(tk(4)) || st.Latency != 80*ms {
		t.Errorf("state after the run: %+v", st)
	}
}

func TestConcurrencyLoopRunOnEndedContextDoesNothing(t *testing.T) {
	gate := &fakeGate{}
	l, c, _ := newConcurrencyHarness(t, 1, gate, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Run(ctx); err != nil || len(gate.limits) != 0 || gate.takes != 0 || len(c.sleeps) != 0 {
		t.Fatalf("Run on an ended context: err %v, limits %v, takes %d, sleeps %d", err, gate.limits, gate.takes, len(c.sleeps))
	}
}

func TestNewConcurrencyLoopRefusesMissingParts(t *testing.T) {
	law := mustGradient(t, GradientSettings{})
	for _, tc := range []struct {
		name string
		law  *Gradient
		gate Gate
		want string
	}{
		{"a", nil, &fakeGate{}, "law is nil"},
		{"a", law, nil, "gate is nil"},
		{"", law, &fakeGate{}, "name must not be empty"},
	} {
		_, err := NewConcurrencyLoop(tc.name, tc.law, tc.gate, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "controller: ") {
			t.Errorf("NewConcurrencyLoop(%q, …): err = %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	_, err := NewConcurrencyLoop("a", nil, &fakeGate{}, nil, nil)
	if !errors.Is(err, ErrMissingDependency) {
		t.Errorf("nil law: err = %v, want ErrMissingDependency", err)
	}
}

func TestConcurrencyLoopMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	gate := &fakeGate{windows: []Window{{}, win(10, 20*ms, 20), win(10, 40*ms, 23), {}}}
	l, _, ctx := newConcurrencyHarness(t, 4, gate, reg)
	// A second loop, another name, on the same registry.
	if _, err := NewConcurrencyLoop("other", mustGradient(t, GradientSettings{}), &fakeGate{}, reg, nil); err != nil {
		t.Fatalf("a second loop on one registry: %v", err)
	}
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	base := (20*ms + dur(20*ms, rise(30*s))).Seconds()
	want := `
# HELP throttled_inner_loop_baseline_seconds The inner loop's estimate of the upstream's latency without queueing.
# TYPE throttled_inner_loop_baseline_seconds gauge
throttled_inner_loop_baseline_seconds{name="other"} 0
throttled_inner_loop_baseline_seconds{name="upstream"} ` + prometheusFloat(base) + `
# HELP throttled_inner_loop_latency_seconds Average upstream latency in the inner loop's last window with samples.
# TYPE throttled_inner_loop_latency_seconds gauge
throttled_inner_loop_latency_seconds{name="other"} 0
throttled_inner_loop_latency_seconds{name="upstream"} 0.04
# HELP throttled_inner_loop_relearns_total Times the inner loop took its latency baseline afresh after RelearnAfter at MinLimit.
# TYPE throttled_inner_loop_relearns_total counter
throttled_inner_loop_relearns_total{name="other"} 0
throttled_inner_loop_relearns_total{name="upstream"} 0
# HELP throttled_inner_loop_steps_total Steps of the inner (concurrency) loop, by what they did to the limit.
# TYPE throttled_inner_loop_steps_total counter
throttled_inner_loop_steps_total{action="decrease",name="other"} 0
throttled_inner_loop_steps_total{action="decrease",name="upstream"} 1
throttled_inner_loop_steps_total{action="hold",name="other"} 0
throttled_inner_loop_steps_total{action="hold",name="upstream"} 1
throttled_inner_loop_steps_total{action="increase",name="other"} 0
throttled_inner_loop_steps_total{action="increase",name="upstream"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// Someone else's collector under one of our names is an error.
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "throttled_inner_loop_relearns_total", Help: "x"}))
	if _, err := NewConcurrencyLoop("a", mustGradient(t, GradientSettings{}), &fakeGate{}, other, nil); err == nil ||
		!strings.HasPrefix(err.Error(), "controller: registering metrics: ") {
		t.Errorf("a clashing collector: err = %v", err)
	}
}

func prometheusFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// hostReading is a process's CPU wait as signals.SharedCPUWait reads it:
// the fraction of its runnable time spent waiting, and the wait per time
// slice, the same every time.
type hostReading struct {
	fraction float64
	delay    time.Duration
}

func (h hostReading) Read() signals.Value { return signals.Value{V: h.fraction, Valid: true} }
func (h hostReading) RunDelay() signals.Value {
	return signals.Value{V: h.delay.Seconds(), Valid: true}
}

// TestConcurrencyLoopHoldsUnusedLimitWhileStarved: the loop passes the
// process's run delay to the law with each window, so an unused limit
// holds while the process is starved and decays when it is not. A fed
// process that wakes its threads often waits as large a fraction of its
// runnable time as a starved one (0.4–0.6 for the fleet bench at load 1
// on 2 cores, 0.6–0.8 on a quarter of a core), so the fraction held the
// decay on every window of a fed fleet; the wait per slice tells them
// apart (30–180 µs fed, 310–1,040 µs starved).
func TestConcurrencyLoopHoldsUnusedLimitWhileStarved(t *testing.T) {
	windows := slices.Repeat([]Window{win(10, 20*ms, 3)}, 11) // the first is dropped
	for _, c := range []struct {
		name string
		host hostReading
		want int
	}{
		{"starved", hostReading{0.7, 500 * time.Microsecond}, 20},
		{"fed, quiet", hostReading{0.05, 20 * time.Microsecond}, 12},
		{"fed, waking often", hostReading{0.45, 60 * time.Microsecond}, 12},
	} {
		gate := &fakeGate{windows: windows}
		l, _, ctx := newConcurrencyHarness(t, 10, gate, nil, WithRunDelay(c.host))
		if err := l.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := gate.limits[len(gate.limits)-1]; got != c.want {
			t.Errorf("%s (CPU wait %v, %v a slice), 3 of 20 in flight for 1 s: limit %d, want %d",
				c.name, c.host.fraction, c.host.delay, got, c.want)
		}
	}
}

// topGate is a fakeGate that also counts priority-0 calls: TopAsked
// answers tops[i] after the i-th TakeWindow (the last one past the end).
type topGate struct {
	fakeGate
	tops []int64
}

func (g *topGate) TopAsked() int64 { return g.tops[min(g.takes, len(g.tops))-1] }

// TestConcurrencyLoopKeepsRoomForTheTopPriority: the loop passes each
// window's priority-0 calls (the gate's count since the last step; what
// was counted before Run is dropped) to the law, so that at a latency the
// gradient cuts, the limit stays at what 100 priority-0 calls a second
// need at 100 ms (counted to Target × Quiet, 62.5 ms), × (1 + Tolerance):
// 7.8, 8 permits; without them the gradient cuts to 3.
func TestConcurrencyLoopKeepsRoomForTheTopPriority(t *testing.T) {
	law := mustGradient(t, GradientSettings{Target: 250 * ms})
	// The baseline is learned at 20 ms, then the upstream answers in 100 ms.
	windows := append([]Window{{}, win(10, 20*ms, 20)}, slices.Repeat([]Window{win(10, 100*ms, 20)}, 19)...)
	for _, c := range []struct {
		name string
		tops []int64
		want int
	}{
		{"10 priority-0 calls a window", []int64{5000, 5010, 5020, 5030, 5040, 5050, 5060, 5070, 5080, 5090, 5100,
			5110, 5120, 5130, 5140, 5150, 5160, 5170, 5180, 5190, 5200}, 8},
		{"none", slices.Repeat([]int64{5000}, 21), 3},
	} {
		gate := &topGate{fakeGate: fakeGate{windows: windows}, tops: c.tops}
		ctx, cancel := context.WithCancel(context.Background())
		l, err := NewConcurrencyLoop("upstream", law, gate, nil, &fakeClock{now: t0, ticks: 20, cancel: cancel},
			WithRunDelay(hostReading{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Run(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := gate.limits[len(gate.limits)-1]; got != c.want {
			t.Errorf("%s, 2 s at 100 ms: limit %d, want %d (limits %v)", c.name, got, c.want, gate.limits)
		}
	}
}
