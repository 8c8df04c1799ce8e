package signals

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// app is a registry instrumented like a service: a latency histogram and a
// requests counter by code, both with the default names.
type app struct {
	reg  *prometheus.Registry
	lat  *prometheus.HistogramVec
	reqs *prometheus.CounterVec
}

var testBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1}

func newApp(t testing.TB, buckets []float64) *app {
	t.Helper()
	a := &app{reg: prometheus.NewRegistry()}
	a.lat = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: DefaultLatencyHistogram, Help: "latency", Buckets: buckets}, []string{"route"})
	a.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: DefaultRequestsCounter, Help: "requests"}, []string{"code"})
	a.reg.MustRegister(a.lat, a.reqs)
	return a
}

// serve records n requests answered with code after d seconds.
func (a *app) serve(n int, d float64, code string) {
	for i := 0; i < n; i++ {
		a.lat.WithLabelValues("/").Observe(d)
		a.reqs.WithLabelValues(code).Inc()
	}
}

func newInProcess(t *testing.T, g prometheus.Gatherer, s InProcessSettings, c *clock) *InProcess {
	t.Helper()
	s.Now = c.Now
	ip, err := NewInProcess(g, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

func read(t *testing.T, src Source) Signals {
	t.Helper()
	s, err := src.Read(context.Background())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return s
}

// want checks one value: a number (within tol) or an invalid reason.
func want(t *testing.T, name string, v Value, wantV float64, wantR Reason, tol float64) {
	t.Helper()
	if wantR != OK {
		if v.Valid || v.Reason != wantR || !math.IsNaN(v.V) {
			t.Errorf("%s = %+v, want invalid %s (V NaN)", name, v, wantR)
		}
		return
	}
	if !v.Valid || math.Abs(v.V-wantV) > tol {
		t.Errorf("%s = %v, want %v ± %v", name, v, wantV, tol)
	}
}

func TestInProcessQuantileOfKnownDistributions(t *testing.T) {
	tenths := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	for _, tc := range []struct {
		name    string
		buckets []float64
		q       float64
		obs     func(a *app)
		want    float64
		tol     float64 // the resolution the buckets allow
	}{
		{"uniform p99", tenths, 0.99, func(a *app) {
			for i := 0; i < 1000; i++ {
				a.serve(1, float64(i)/1000, "200")
			}
		}, 0.99, 0.1},
		{"uniform p50", tenths, 0.5, func(a *app) {
			for i := 0; i < 1000; i++ {
				a.serve(1, float64(i)/1000, "200")
			}
		}, 0.5, 0.1},
		// 90% fast, 10% slow: p99 is inside the slow bucket (0.25, 0.5].
		{"bimodal p99", testBuckets, 0.99, func(a *app) { a.serve(900, 0.07, "200"); a.serve(100, 0.3, "200") }, 0.475, 1e-12},
		{"bimodal p50", testBuckets, 0.5, func(a *app) { a.serve(900, 0.07, "200"); a.serve(100, 0.3, "200") }, 0.05 + 0.05*(500.0/900), 1e-12},
		// Slower than the largest bucket: the largest finite bound, as PromQL.
		{"beyond the buckets", testBuckets, 0.99, func(a *app) { a.serve(10, 5, "200") }, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t, tc.buckets)
			c := newClock(at(0))
			a.serve(1, 0.9, "200") // before the baseline: outside the window
			ip := newInProcess(t, a.reg, InProcessSettings{Quantile: tc.q}, c)
			want(t, "first read", read(t, ip).Latency, 0, NoBaseline, 0)
			tc.obs(a)
			c.Set(at(5))
			v := read(t, ip).Latency
			want(t, "latency", v, tc.want, OK, tc.tol+1e-12)
			if !v.At.Equal(at(5)) {
				t.Errorf("At = %v, want %v", v.At, at(5))
			}
		})
	}
}

// TestInProcessWindows drives one registry through the instants t0..t9.
func TestInProcessWindows(t *testing.T) {
	a := newApp(t, testBuckets)
	c := newClock(at(0))
	ip := newInProcess(t, a.reg, InProcessSettings{}, c)
	for _, st := range []struct {
		at      int
		drive   func()
		lat     float64
		latR    Reason
		ratio   float64
		ratioR  Reason
		comment string
	}{
		{0, func() {}, 0, NoData, 0, NoData, "nothing registered yet"},
		{1, func() { a.serve(100, 0.07, "200") }, 0.05 + 0.05*0.99, OK, 0, OK, "first series appear: counted whole"},
		{2, func() {}, 0, NoTraffic, 0, NoTraffic, "no request in the window: invalid, not 0"},
		{3, func() { a.serve(6, 0.3, "200"); a.serve(3, 0.3, "500"); a.serve(1, 0.3, "503") }, 0.25 + 0.25*0.99, OK, 0.4, OK, "only this window counts"},
		{4, func() { a.serve(1, 0.07, "404"); a.serve(3, 0.07, "200") }, 0.05 + 0.05*0.99, OK, 0, OK, "4xx is not an error"},
		{5, func() { a.serve(1, 0.07, "502") }, 0.05 + 0.05*0.99, OK, 1, OK, "new code series counted whole"},
		{6, func() {}, 0, NoTraffic, 0, NoTraffic, ""},
	} {
		c.Set(at(st.at))
		st.drive()
		s := read(t, ip)
		want(t, "t"+string(rune('0'+st.at))+" latency ("+st.comment+")", s.Latency, st.lat, st.latR, 1e-12)
		want(t, "t"+string(rune('0'+st.at))+" error ratio ("+st.comment+")", s.ErrorRatio, st.ratio, st.ratioR, 1e-12)
		want(t, "saturation", s.Saturation, 0, Disabled, 0)
	}
}

func TestInProcessCounterReset(t *testing.T) {
	a := newApp(t, testBuckets)
	c := newClock(at(0))
	ip := newInProcess(t, a.reg, InProcessSettings{}, c)
	a.serve(50, 0.3, "200")
	a.serve(50, 0.3, "500")
	read(t, ip)
	// The instrumentation is replaced (as after a collector reset): every
	// count is below the last read and starts over from 0.
	a.reg.Unregister(a.lat)
	a.reg.Unregister(a.reqs)
	b := newApp(t, testBuckets)
	a.reg.MustRegister(b.lat, b.reqs)
	b.serve(9, 0.07, "200")
	b.serve(1, 0.07, "500")
	c.Set(at(1))
	s := read(t, ip)
	want(t, "latency after reset", s.Latency, 0.05+0.05*0.99, OK, 1e-12)
	want(t, "error ratio after reset", s.ErrorRatio, 0.1, OK, 1e-12)
	// And the next window diffs against the new counts.
	b.serve(1, 0.3, "200")
	c.Set(at(2))
	s = read(t, ip)
	want(t, "latency after", s.Latency, 0.25+0.25*0.99, OK, 1e-12)
	want(t, "error ratio after", s.ErrorRatio, 0, OK, 0)
}

func TestInProcessCounterDelta(t *testing.T) {
	for _, tc := range []struct {
		prev, cur float64
		seen      bool
		want      float64
	}{
		{10, 15, true, 5},
		{10, 10, true, 0},
		{10, 3, true, 3}, // reset: restarted from 0
		{0, 7, false, 7}, // new series
	} {
		if got := counterDelta(tc.prev, tc.cur, tc.seen); got != tc.want {
			t.Errorf("counterDelta(%v, %v, %v) = %v, want %v", tc.prev, tc.cur, tc.seen, got, tc.want)
		}
	}
}

func TestInProcessSaturation(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inflight_ratio", Help: "h"}, []string{"pool"})
	reg.MustRegister(g)
	ip := newInProcess(t, reg, InProcessSettings{SaturationGauge: "inflight_ratio"}, newClock(at(0)))
	want(t, "no series", read(t, ip).Saturation, 0, NoData, 0)
	g.WithLabelValues("a").Set(0.2)
	g.WithLabelValues("b").Set(0.7)
	// Not windowed: valid on the first read of the gauge.
	want(t, "max of series", read(t, ip).Saturation, 0.7, OK, 0)
	g.WithLabelValues("b").Set(math.NaN())
	want(t, "NaN series skipped", read(t, ip).Saturation, 0.2, OK, 0)
	g.WithLabelValues("a").Set(math.Inf(+1))
	want(t, "no finite series", read(t, ip).Saturation, 0, Inf, 0)
}

func TestInProcessWrongTypes(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "lat", Help: "h"}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "reqs", Help: "h"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "sat", Help: "h"}),
	)
	ip := newInProcess(t, reg, InProcessSettings{LatencyHistogram: "lat", RequestsCounter: "reqs", SaturationGauge: "sat"}, newClock(at(0)))
	s, err := ip.Read(context.Background())
	for _, k := range Kinds() {
		v := s.Get(k)
		if v.Valid || v.Reason != Unsupported || v.Err == nil || !strings.Contains(v.Err.Error(), "want a") {
			t.Errorf("%s = %+v, want Unsupported naming the wanted type", k, v)
		}
	}
	if err == nil || !strings.Contains(err.Error(), `metric "lat" is a GAUGE, want a histogram`) {
		t.Errorf("Read error %v does not name the bad metric", err)
	}
}

func TestInProcessCustomNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "upstream_seconds", Help: "h", Buckets: testBuckets})
	r := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "upstream_total", Help: "h"}, []string{"status"})
	reg.MustRegister(h, r)
	ip := newInProcess(t, reg, InProcessSettings{
		LatencyHistogram: "upstream_seconds", RequestsCounter: "upstream_total", CodeLabel: "status",
		IsError: func(code string) bool { return code == "timeout" },
	}, newClock(at(0)))
	read(t, ip)
	h.Observe(0.3)
	r.WithLabelValues("timeout").Inc()
	r.WithLabelValues("500").Add(3)
	s := read(t, ip)
	want(t, "latency", s.Latency, 0.25+0.25*0.99, OK, 1e-12)
	want(t, "error ratio", s.ErrorRatio, 0.25, OK, 0)
}

func TestInProcessGatherError(t *testing.T) {
	a := newApp(t, testBuckets)
	mode := "ok" // or "fail": nothing gathered, or "partial": no requests counter
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := a.reg.Gather()
		switch mode {
		case "fail":
			return nil, errors.New("collector broke")
		case "partial":
			return mfs[:1], errors.New("collector broke") // sorted: the histogram only
		}
		return mfs, err
	})
	c := newClock(at(0))
	ip := newInProcess(t, g, InProcessSettings{}, c)
	a.serve(1, 0.07, "200")
	read(t, ip)

	a.serve(1, 0.07, "500")
	mode = "fail"
	s, err := ip.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "signals: gather: collector broke") {
		t.Fatalf("Read error = %v", err)
	}
	want(t, "latency", s.Latency, 0, QueryError, 0)
	want(t, "error ratio", s.ErrorRatio, 0, QueryError, 0)
	want(t, "saturation", s.Saturation, 0, Disabled, 0)

	a.serve(1, 0.3, "200")
	mode = "partial"
	s, err = ip.Read(context.Background())
	if err == nil {
		t.Fatal("partial gather: no error")
	}
	// The baseline is kept across the failed read: the window spans it.
	want(t, "latency after partial gather", s.Latency, 0.25+0.25*0.98, OK, 1e-12)
	want(t, "error ratio missing from partial gather", s.ErrorRatio, 0, QueryError, 0)

	a.serve(2, 0.07, "200")
	mode = "ok"
	want(t, "error ratio across both failures", read(t, ip).ErrorRatio, 0.25, OK, 0)
}

func TestInProcessCanceledContext(t *testing.T) {
	a := newApp(t, testBuckets)
	ip := newInProcess(t, a.reg, InProcessSettings{}, newClock(at(0)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := ip.Read(ctx)
	if !errors.Is(err, context.Canceled) || s.Latency.Reason != QueryError {
		t.Fatalf("Read(canceled) = %+v, %v", s, err)
	}
}

func TestInProcessMetrics(t *testing.T) {
	a := newApp(t, testBuckets)
	metricsReg := prometheus.NewRegistry()
	c := newClock(at(0))
	ip, err := NewInProcess(a.reg, InProcessSettings{Now: c.Now}, metricsReg)
	if err != nil {
		t.Fatal(err)
	}
	a.serve(1, 0.07, "200")
	read(t, ip) // no_baseline ×2
	read(t, ip) // no_traffic ×2
	a.serve(1, 0.07, "200")
	read(t, ip) // ok ×2
	for _, tc := range []struct {
		signal, result string
		want           float64
	}{
		{"latency", "no_baseline", 1}, {"latency", "no_traffic", 1}, {"latency", "ok", 1},
		{"error_ratio", "no_baseline", 1}, {"error_ratio", "ok", 1},
		{"admitted", "no_data", 3}, // no decision counter in this registry
	} {
		got := testutil.ToFloat64(ip.m.reads.WithLabelValues("inprocess", tc.signal, tc.result))
		if got != tc.want {
			t.Errorf("reads{%s,%s} = %v, want %v", tc.signal, tc.result, got, tc.want)
		}
	}
	// Disabled saturation is not counted: 6 combinations above + error_ratio no_traffic.
	if n := testutil.CollectAndCount(metricsReg, "throttled_signals_reads_total"); n != 7 {
		t.Errorf("%d series, want 7", n)
	}
	// A second source on the same registry shares the counter.
	if _, err := NewInProcess(a.reg, InProcessSettings{}, metricsReg); err != nil {
		t.Errorf("second source on one registry: %v", err)
	}
}

func TestNewInProcessRejectsBadSettings(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, tc := range []struct {
		s    InProcessSettings
		want string
	}{
		{InProcessSettings{Quantile: 1.5}, "Quantile 1.5"},
		{InProcessSettings{Quantile: -0.1}, "Quantile -0.1"},
		{InProcessSettings{Quantile: math.NaN()}, "Quantile NaN"},
		{InProcessSettings{LatencyHistogram: "bad-name"}, `LatencyHistogram "bad-name"`},
		{InProcessSettings{RequestsCounter: "9lives"}, `RequestsCounter "9lives"`},
		{InProcessSettings{CodeLabel: "co de"}, `CodeLabel "co de"`},
		{InProcessSettings{SaturationGauge: "x.y"}, `SaturationGauge "x.y"`},
		{InProcessSettings{AdmittedCounter: "a{b}"}, `AdmittedCounter "a{b}"`},
	} {
		_, err := NewInProcess(reg, tc.s, nil)
		if !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewInProcess(%+v) error = %v, want one naming %s", tc.s, err, tc.want)
		}
	}
	if _, err := NewInProcess(nil, InProcessSettings{}, nil); !errors.Is(err, ErrInvalidSettings) {
		t.Errorf("nil gatherer: %v", err)
	}
}

func BenchmarkInProcessRead(b *testing.B) {
	a := newApp(b, testBuckets)
	for _, code := range []string{"200", "404", "500", "503"} {
		a.serve(10, 0.07, code)
	}
	ip, err := NewInProcess(a.reg, InProcessSettings{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.serve(1, 0.3, "200")
		if _, err := ip.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A saturation gauge whose series carry an instance label is read one by
// one as well: the fleet's leader steps each instance by its own reading.
func TestInProcessSaturationByInstance(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sat", Help: "h"}, []string{InstanceLabel})
	reg.MustRegister(g)
	ip := newInProcess(t, reg, InProcessSettings{SaturationGauge: "sat"}, newClock(at(0)))
	if s := read(t, ip); s.SaturationByInstance != nil {
		t.Fatalf("no series: by instance %v, want nil", s.SaturationByInstance)
	}
	g.WithLabelValues("hot").Set(0.5)
	g.WithLabelValues("fine").Set(0)
	g.WithLabelValues("broken").Set(math.NaN())
	s := read(t, ip)
	want(t, "fleet", s.Saturation, 0.5, OK, 0)
	want(t, "hot", s.SaturationByInstance["hot"], 0.5, OK, 0)
	want(t, "fine", s.SaturationByInstance["fine"], 0, OK, 0)
	want(t, "broken", s.SaturationByInstance["broken"], 0, NaN, 0)
	if len(s.SaturationByInstance) != 3 {
		t.Fatalf("by instance %v, want hot, fine and broken", s.SaturationByInstance)
	}
}
