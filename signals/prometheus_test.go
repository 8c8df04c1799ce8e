package signals

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/testenv"
)

// scrapedApp is an app served on 127.0.0.1 for Prometheus to scrape. drive
// and scrapes exclude each other, so a scrape sees all of a drive or none.
type scrapedApp struct {
	*app
	mu   sync.Mutex
	addr string
}

func newScrapedApp(t *testing.T) *scrapedApp {
	t.Helper()
	a := &scrapedApp{app: newApp(t, testBuckets)}
	// Every series exists, at 0, before the first scrape.
	a.lat.WithLabelValues("/")
	a.reqs.WithLabelValues("200")
	a.reqs.WithLabelValues("500")
	h := promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.addr = strings.TrimPrefix(srv.URL, "http://")
	return a
}

func (a *scrapedApp) drive(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f()
}

func newProm(t *testing.T, s PrometheusSettings) *Prometheus {
	t.Helper()
	p, err := NewPrometheus(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrometheusSourceDefaultQueries: the default PromQL over a real
// Prometheus scraping a real target gives the same p99 and error ratio as
// the in-process source over the same registry.
func TestPrometheusSourceDefaultQueries(t *testing.T) {
	a := newScrapedApp(t)
	d := decisions(t, a.reg)
	d.WithLabelValues("free", "per-key", "allowed")
	d.WithLabelValues("premium", "per-key", "shed")
	prom := testenv.StartPrometheus(t, a.addr)
	prom.WaitForSeries(t, `http_requests_total{code="500"}`, 30*time.Second)
	ip, err := NewInProcess(a.reg, InProcessSettings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	read(t, ip) // baseline
	a.drive(func() {
		a.serve(900, 0.07, "200")
		a.serve(100, 0.3, "500")
		d.WithLabelValues("free", "per-key", "allowed").Add(1000)
		d.WithLabelValues("premium", "per-key", "shed").Add(1000)
	})
	// Wait until a scrape after the drive is in the rate window.
	prom.WaitForSeries(t, `sum(increase(http_requests_total[1m])) > 0`, 30*time.Second)

	// The defaults on the scraped app's job, as serve runs them.
	src := newProm(t, PrometheusSettings{URL: prom.URL(), Selector: `job="` + prom.Job() + `"`})
	s, err := src.Read(context.Background())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	// 1000 requests, 100 of them in (0.25, 0.5]: p99 is 90% into that bucket.
	want(t, "latency", s.Latency, 0.475, OK, 1e-9)
	want(t, "error ratio", s.ErrorRatio, 0.1, OK, 1e-9)
	want(t, "saturation", s.Saturation, 0, Disabled, 0)
	// rate() extrapolates over its window: only the shape is certain.
	if r := s.Admitted; !r.Valid || len(r.ByTier) != 1 || !(r.ByTier["free"] > 0) {
		t.Errorf("admitted %+v, want a positive rate for free only (premium was only shed)", r)
	}
	if age := time.Since(s.Latency.At); age < -time.Second || age > 10*time.Second {
		t.Errorf("latency At %v is %v from now", s.Latency.At, age)
	}
	in := read(t, ip)
	want(t, "in-process latency", in.Latency, s.Latency.V, OK, 1e-9)
	want(t, "in-process error ratio", in.ErrorRatio, s.ErrorRatio.V, OK, 1e-9)
}

// TestPrometheusSourceJudgesAnswers runs queries whose answers are known
// against a real Prometheus.
func TestPrometheusSourceJudgesAnswers(t *testing.T) {
	prom := testenv.StartPrometheus(t)
	for _, tc := range []struct {
		query  string
		want   float64
		reason Reason
	}{
		{`0`, 0, OK}, // a real 0 is valid
		{`0.25`, 0.25, OK},
		{`vector(0.5)`, 0.5, OK},
		{`scalar(vector(0.75))`, 0.75, OK},
		{`0/0`, 0, NaN},
		{`vector(0/0)`, 0, NaN},
		{`1/0`, 0, Inf},
		{`-1/0`, 0, Inf},
		{`vector(1/0)`, 0, Inf},
		{`throttled_no_such_metric`, 0, NoData},
		{`vector(1)[1m:1s]`, 0, Unsupported}, // a range vector
		{`"text"`, 0, QueryError},            // client_golang cannot decode a string result
		{`sum(`, 0, QueryError},
		{`rate(up)`, 0, QueryError},
		// Several series: the largest finite one.
		{`vector(1) or label_replace(vector(3), "a", "b", "", "")`, 3, OK},
		{`label_replace(vector(0/0), "a", "b", "", "") or vector(2)`, 2, OK},
		{`label_replace(vector(0/0), "a", "b", "", "") or vector(1/0)`, 0, NaN},
	} {
		t.Run(tc.query, func(t *testing.T) {
			src := newProm(t, PrometheusSettings{URL: prom.URL(), LatencyQuery: tc.query, ErrorRatioQuery: "vector(0)", SaturationQuery: tc.query})
			s, err := src.Read(context.Background())
			want(t, "latency", s.Latency, tc.want, tc.reason, 1e-12)
			want(t, "saturation", s.Saturation, tc.want, tc.reason, 1e-12)
			want(t, "error ratio", s.ErrorRatio, 0, OK, 0)
			switch tc.reason {
			case QueryError, Unsupported:
				if err == nil || !strings.Contains(err.Error(), "signals: latency query") ||
					!strings.Contains(err.Error(), "signals: saturation query") {
					t.Errorf("Read error %v, want one naming both failed signals", err)
				}
			default:
				if err != nil {
					t.Errorf("Read error %v, want nil", err)
				}
			}
			var perr *v1.Error
			if tc.reason == QueryError && (!errors.As(err, &perr) || (perr.Type != v1.ErrBadData && perr.Type != v1.ErrBadResponse)) {
				t.Errorf("Read error %v, want a bad_data or bad_response API error", err)
			}
		})
	}
}

func TestPrometheusSourceStale(t *testing.T) {
	prom := testenv.StartPrometheus(t)
	c := newClock(time.Now())
	src := newProm(t, PrometheusSettings{URL: prom.URL(), LatencyQuery: "vector(1)", ErrorRatioQuery: "vector(0)", MaxAge: time.Minute, Now: c.Now})
	for _, tc := range []struct {
		name   string
		offset time.Duration // of the fake clock from the real one
		reason Reason
	}{
		{"fresh", 0, OK},
		{"clock an hour ahead: sample an hour old", time.Hour, Stale},
		{"clock an hour behind: sample from the future", -time.Hour, Stale},
		{"within MaxAge", 30 * time.Second, OK},
	} {
		c.Set(time.Now().Add(tc.offset))
		s, _ := src.Read(context.Background())
		want(t, tc.name, s.Latency, 1, tc.reason, 0)
	}
}

func TestPrometheusSourceUnreachable(t *testing.T) {
	url := "http://" + testenv.Addr(testenv.FreePort(t)) // nothing listens there
	src := newProm(t, PrometheusSettings{URL: url, Selector: `job="app"`})
	s, err := src.Read(context.Background())
	want(t, "latency", s.Latency, 0, QueryError, 0)
	want(t, "error ratio", s.ErrorRatio, 0, QueryError, 0)
	want(t, "saturation", s.Saturation, 0, Disabled, 0)
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(s.Latency.Err, syscall.ECONNREFUSED) {
		t.Fatalf("Read error %v, want connection refused", err)
	}
}

// TestPrometheusSourceTimeout: a Prometheus that stops answering (SIGSTOP)
// makes each query fail at its timeout; once it answers again so do reads.
func TestPrometheusSourceTimeout(t *testing.T) {
	prom := testenv.StartPrometheus(t)
	reg := prometheus.NewRegistry()
	src, err := NewPrometheus(PrometheusSettings{URL: prom.URL(), LatencyQuery: "vector(1)", ErrorRatioQuery: "vector(0)",
		Timeout: 300 * time.Millisecond}, reg)
	if err != nil {
		t.Fatal(err)
	}
	prom.Pause()
	s, err := src.Read(context.Background())
	prom.Resume()
	want(t, "latency", s.Latency, 0, QueryError, 0)
	want(t, "error ratio", s.ErrorRatio, 0, QueryError, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read error %v, want deadline exceeded", err)
	}
	s, err = src.Read(context.Background())
	if err != nil {
		t.Fatalf("Read after resume: %v", err)
	}
	want(t, "latency after resume", s.Latency, 1, OK, 0)
	for _, tc := range []struct {
		signal, result string
	}{{"latency", "query_error"}, {"latency", "ok"}, {"error_ratio", "query_error"}, {"error_ratio", "ok"}} {
		if got := testutil.ToFloat64(src.m.reads.WithLabelValues("prometheus", tc.signal, tc.result)); got != 1 {
			t.Errorf("reads{%s,%s} = %v, want 1", tc.signal, tc.result, got)
		}
	}
}

func TestPrometheusSourceCanceled(t *testing.T) {
	prom := testenv.StartPrometheus(t)
	src := newProm(t, PrometheusSettings{URL: prom.URL(), Selector: `job="app"`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := src.Read(ctx)
	if !errors.Is(err, context.Canceled) || s.Latency.Valid || s.ErrorRatio.Valid {
		t.Fatalf("Read(canceled) = %+v, %v", s, err)
	}
}

func TestNewPrometheusRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		s    PrometheusSettings
		want string
	}{
		{PrometheusSettings{}, "URL is empty"},
		{PrometheusSettings{URL: "127.0.0.1:9090"}, `URL "127.0.0.1:9090"`},
		{PrometheusSettings{URL: "ftp://host"}, `URL "ftp://host"`},
		{PrometheusSettings{URL: "http://"}, `URL "http://"`},
		{PrometheusSettings{URL: "http://h", Timeout: -time.Second}, "Timeout -1s"},
		{PrometheusSettings{URL: "http://h", MaxAge: -time.Second}, "MaxAge -1s"},
	} {
		_, err := NewPrometheus(tc.s, nil)
		if !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewPrometheus(%+v) error = %v, want one naming %s", tc.s, err, tc.want)
		}
	}
}

func TestReduceWithoutResult(t *testing.T) {
	if v := reduce(nil, t0); v.Valid || v.Reason != Unsupported || !math.IsNaN(v.V) {
		t.Fatalf("reduce(nil) = %+v", v)
	}
}
