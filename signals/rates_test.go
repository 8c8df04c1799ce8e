package signals

import (
	"context"
	"errors"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/throttledhq/throttled/internal/testenv"
)

// decisions is a decision counter as the limiter exports it.
func decisions(t testing.TB, reg *prometheus.Registry) *prometheus.CounterVec {
	t.Helper()
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: DefaultAdmittedCounter, Help: "decisions"},
		[]string{"tier", "rule", "decision"})
	reg.MustRegister(cv)
	return cv
}

// wantRates checks a Rates: the rates by tier, or an invalid reason.
func wantRates(t *testing.T, name string, r Rates, by map[string]float64, reason Reason) {
	t.Helper()
	if reason != OK {
		if r.Valid || r.Reason != reason || r.ByTier != nil {
			t.Errorf("%s = %+v, want invalid %s", name, r, reason)
		}
		return
	}
	ok := r.Valid && r.Reason == OK && maps.EqualFunc(r.ByTier, by, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })
	if !ok {
		t.Errorf("%s = %+v, want %v", name, r, by)
	}
}

func TestInProcessAdmittedWindows(t *testing.T) {
	a := newApp(t, testBuckets)
	c := newClock(at(0))
	ip := newInProcess(t, a.reg, InProcessSettings{}, c)
	var d *prometheus.CounterVec
	for _, st := range []struct {
		at     int // seconds from t0
		drive  func()
		by     map[string]float64
		reason Reason
		what   string
	}{
		{0, func() {}, nil, NoData, "no counter yet"},
		{2, func() {
			d = decisions(t, a.reg)
			d.WithLabelValues("free", "per-key", "allowed").Add(10)
		}, map[string]float64{"free": 5}, OK, "a counter that appears counts whole over the window"},
		{4, func() {
			d.WithLabelValues("free", "per-key", "allowed").Add(40)
			d.WithLabelValues("free", "per-key", "shed").Add(1000)
			d.WithLabelValues("free", "per-key", "fallback_allowed").Add(1000)
			d.WithLabelValues("premium", "per-key", "allowed").Add(6)
			d.WithLabelValues("premium", "per-ip", "allowed").Add(2)
		}, map[string]float64{"free": 20, "premium": 4}, OK, "allowed only, rules summed, per second"},
		{5, func() {}, map[string]float64{"free": 0, "premium": 0}, OK, "no traffic: a valid 0"},
		{9, func() { d.WithLabelValues("free", "per-key", "allowed").Add(8) }, map[string]float64{"free": 2, "premium": 0}, OK, "a longer window"},
		{10, func() {
			d.WithLabelValues("free", "per-key", "delayed").Add(3) // held by a delay rule, then admitted
			d.WithLabelValues("free", "per-key", "shadow_over_quota").Add(50)
		}, map[string]float64{"free": 3, "premium": 0}, OK, "delayed is admitted, shadow is not counted twice"},
	} {
		c.Set(at(st.at))
		st.drive()
		wantRates(t, st.what, read(t, ip).Admitted, st.by, st.reason)
	}
}

func TestInProcessAdmittedBaseline(t *testing.T) {
	a := newApp(t, testBuckets)
	d := decisions(t, a.reg)
	d.WithLabelValues("free", "r", "allowed").Add(100)
	c := newClock(at(0))
	ip := newInProcess(t, a.reg, InProcessSettings{}, c)
	r := read(t, ip).Admitted
	wantRates(t, "first read", r, nil, NoBaseline)
	if !r.At.Equal(at(0)) {
		t.Errorf("At %v, want t0", r.At)
	}
	wantRates(t, "same instant: no window", read(t, ip).Admitted, nil, NoBaseline)
	c.Set(at(1))
	d.WithLabelValues("free", "r", "allowed").Add(3)
	wantRates(t, "next", read(t, ip).Admitted, map[string]float64{"free": 3}, OK)
	c.Set(at(2))
	d.Reset() // a restarted process
	d.WithLabelValues("free", "r", "allowed").Add(7)
	wantRates(t, "after a reset the counter counts whole", read(t, ip).Admitted, map[string]float64{"free": 7}, OK)
}

func TestInProcessAdmittedUnusable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(reg *prometheus.Registry)
		reason Reason
		err    string
	}{
		{"a gauge", func(reg *prometheus.Registry) {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: DefaultAdmittedCounter, Help: "h"})
			reg.MustRegister(g)
		}, Unsupported, "is a GAUGE, want a counter"},
		{"no tier label", func(reg *prometheus.Registry) {
			cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: DefaultAdmittedCounter, Help: "h"}, []string{"decision"})
			reg.MustRegister(cv)
			cv.WithLabelValues("allowed").Inc()
		}, Unsupported, `no sample has a "tier" label`},
		{"nothing allowed", func(reg *prometheus.Registry) {
			decisions(t, reg).WithLabelValues("free", "r", "shed").Inc()
		}, NoData, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			tc.setup(reg)
			c := newClock(at(0))
			ip := newInProcess(t, reg, InProcessSettings{}, c)
			_, _ = ip.Read(context.Background()) // the baseline, if any
			c.Set(at(1))
			s, err := ip.Read(context.Background())
			wantRates(t, tc.name, s.Admitted, nil, tc.reason)
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || s.Admitted.Err == nil) {
				t.Errorf("Read error %v, Admitted.Err %v; want both naming %q", err, s.Admitted.Err, tc.err)
			}
		})
	}
}

// A counter without a decision label counts whole, under a custom name.
func TestInProcessAdmittedCustomCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "upstream_by_tier_total", Help: "h"}, []string{"tier"})
	reg.MustRegister(cv)
	cv.WithLabelValues("gold").Add(5)
	c := newClock(at(0))
	ip := newInProcess(t, reg, InProcessSettings{AdmittedCounter: "upstream_by_tier_total"}, c)
	read(t, ip)
	c.Set(at(2))
	cv.WithLabelValues("gold").Add(5)
	wantRates(t, "custom", read(t, ip).Admitted, map[string]float64{"gold": 2.5}, OK)
}

// A failed gather keeps the baseline: the next window spans the failure.
func TestInProcessAdmittedGatherError(t *testing.T) {
	a := newApp(t, testBuckets)
	d := decisions(t, a.reg)
	fail := false
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if fail {
			return nil, errors.New("collector broke")
		}
		return a.reg.Gather()
	})
	c := newClock(at(0))
	ip := newInProcess(t, g, InProcessSettings{}, c)
	d.WithLabelValues("free", "r", "allowed").Add(1)
	read(t, ip)
	c.Set(at(1))
	fail = true
	d.WithLabelValues("free", "r", "allowed").Add(4)
	s, _ := ip.Read(context.Background())
	wantRates(t, "failed gather", s.Admitted, nil, QueryError)
	c.Set(at(2))
	fail = false
	d.WithLabelValues("free", "r", "allowed").Add(4)
	wantRates(t, "across the failure", read(t, ip).Admitted, map[string]float64{"free": 4}, OK)
}

func TestRateSumSkipsUnusableSamples(t *testing.T) {
	var s rateSum
	s.add("free", 1, at(0), OK)
	s.add("free", 2, at(1), OK)
	s.add("gold", math.NaN(), at(1), OK)
	s.add("gold", -1, at(1), OK)
	s.add("", 7, at(1), OK)
	s.add("old", 3, at(1), Stale)
	s.add("huge", math.MaxFloat64, at(1), OK)
	s.add("huge", math.MaxFloat64, at(1), OK) // overflows: dropped
	r := s.rates(at(2))
	wantRates(t, "mixed", r, map[string]float64{"free": 3}, OK)
	if !r.At.Equal(at(1)) {
		t.Errorf("At %v, want the latest sample's", r.At)
	}
	for _, tc := range []struct {
		name   string
		add    func(*rateSum)
		reason Reason
	}{
		{"nothing", func(*rateSum) {}, NoData},
		{"NaN first", func(s *rateSum) { s.add("a", math.NaN(), at(0), OK); s.add("b", 0, at(0), Stale) }, NaN},
		{"stale first", func(s *rateSum) { s.add("a", 1, at(0), Stale); s.add("b", math.Inf(1), at(0), OK) }, Stale},
		{"negative", func(s *rateSum) { s.add("a", -2, at(0), OK) }, Inf},
		{"untagged", func(s *rateSum) { s.add("", 1, at(0), OK) }, Unsupported},
	} {
		var s rateSum
		tc.add(&s)
		wantRates(t, tc.name, s.rates(at(0)), nil, tc.reason)
	}
}

// TestPrometheusSourceAdmitted runs per-tier queries whose answers are known
// against a real Prometheus.
func TestPrometheusSourceAdmitted(t *testing.T) {
	prom := testenv.StartPrometheus(t)
	tier := func(v, name string) string { return `label_replace(vector(` + v + `), "tier", "` + name + `", "", "")` }
	for _, tc := range []struct {
		query  string
		by     map[string]float64
		reason Reason
	}{
		{tier("2", "free") + " or " + tier("3", "premium"), map[string]float64{"free": 2, "premium": 3}, OK},
		{tier("0", "free"), map[string]float64{"free": 0}, OK},
		{`label_replace(` + tier("2", "free") + `, "rule", "a", "", "") or label_replace(` + tier("5", "free") + `, "rule", "b", "", "")`,
			map[string]float64{"free": 7}, OK},
		{tier("0/0", "free") + " or " + tier("1", "premium"), map[string]float64{"premium": 1}, OK},
		{tier("0/0", "free"), nil, NaN},
		{`vector(1)`, nil, Unsupported},
		{`1`, nil, Unsupported},
		{`throttled_no_such_metric`, nil, NoData},
		{`sum(`, nil, QueryError},
	} {
		t.Run(tc.query, func(t *testing.T) {
			src := newProm(t, PrometheusSettings{URL: prom.URL(), AdmittedQuery: tc.query, LatencyQuery: "vector(0)", ErrorRatioQuery: "vector(0)"})
			s, err := src.Read(context.Background())
			wantRates(t, "admitted", s.Admitted, tc.by, tc.reason)
			failed := tc.reason == QueryError || tc.reason == Unsupported
			if named := err != nil && strings.Contains(err.Error(), "signals: admitted query"); named != failed {
				t.Errorf("Read error %v; want one naming the admitted query: %v", err, failed)
			}
			want(t, "latency", s.Latency, 0, OK, 0)
		})
	}
	c := newClock(time.Now().Add(time.Hour))
	src := newProm(t, PrometheusSettings{URL: prom.URL(), AdmittedQuery: tier("1", "free"), Selector: `job="app"`, MaxAge: time.Minute, Now: c.Now})
	s, _ := src.Read(context.Background())
	wantRates(t, "an hour old", s.Admitted, nil, Stale)
}
