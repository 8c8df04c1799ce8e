package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// e2eService is the protected service as Prometheus sees it: a registry
// with the two metrics the default signal queries read, served at
// /metrics on 127.0.0.1, and fed by a driver goroutine with one request
// every e2eTrafficEvery, fast (10 ms) or slow (2 s) as the test decides.
// The slow latencies are observed, not slept: the test needs the service
// to look overloaded, not to be.
type e2eService struct {
	srv  *httptest.Server
	slow atomic.Bool
	lat  prometheus.Histogram
	reqs *prometheus.CounterVec
}

const (
	e2eTrafficEvery = 20 * time.Millisecond
	e2eFast         = 0.010 // seconds
	e2eSlow         = 2.0   // seconds, 4× the latency target
)

func startE2EService(t *testing.T) *e2eService {
	t.Helper()
	reg := prometheus.NewRegistry()
	s := &e2eService{
		lat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "http_request_duration_seconds", Help: "Request latency.", Buckets: prometheus.DefBuckets}),
		reqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "Requests by status code."}, []string{"code"}),
	}
	reg.MustRegister(s.lat, s.reqs)
	// A 5xx series at 0 makes the error ratio 0 (valid) instead of an
	// empty vector (NoData).
	s.reqs.WithLabelValues("500")
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// addr is the host:port Prometheus scrapes.
func (s *e2eService) addr() string { return s.srv.Listener.Addr().String() }

// drive records the service's traffic until ctx ends.
func (s *e2eService) drive(ctx context.Context) {
	tick := time.NewTicker(e2eTrafficEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d := e2eFast
		if s.slow.Load() {
			d = e2eSlow
		}
		s.lat.Observe(d)
		s.reqs.WithLabelValues("200").Inc()
	}
}

// e2ePublisher adapts a limiter.MultiplierPublisher to the controller's
// Publisher and Loader (a plain type conversion) and records every publish.
type e2ePublisher struct {
	p   *coord.Publisher
	mu  sync.Mutex
	log []multiplier.Set
	err error // the first failed publish
}

func (p *e2ePublisher) Publish(ctx context.Context, m multiplier.Set) error {
	err := p.p.Publish(ctx, m)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.err == nil && ctx.Err() == nil {
		p.err = err
	}
	if err == nil {
		p.log = append(p.log, m)
	}
	return err
}

func (p *e2ePublisher) Load(ctx context.Context) (multiplier.Set, bool, error) {
	m, found, err := p.p.Load(ctx)
	return m, found, err
}

func (p *e2ePublisher) published() ([]multiplier.Set, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]multiplier.Set(nil), p.log...), p.err
}

// e2eTiers maps API keys to tiers, as the admin API's store would.
type e2eTiers map[string]string

func (m e2eTiers) TierOf(client string) (string, bool) {
	t, ok := m[client]
	return t, ok
}

// e2eReply is one response of the enforced app.
type e2eReply struct {
	status     int
	retryAfter string
	refusal    enforce.Refusal // decoded for 429 and 503
}

func (r e2eReply) String() string {
	if r.status == http.StatusOK {
		return "200"
	}
	return fmt.Sprintf("%d (reason %q, tier %q, Retry-After %q)", r.status, r.refusal.Reason, r.refusal.Tier, r.retryAfter)
}

// e2eClient calls the enforced app with an API key.
type e2eClient struct {
	url string
	c   *http.Client
}

func (c e2eClient) get(t *testing.T, key string) e2eReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url+"/api/items", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatalf("GET as %s: %v", key, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET as %s: reading the body: %v", key, err)
	}
	r := e2eReply{status: resp.StatusCode, retryAfter: resp.Header.Get(enforce.HeaderRetryAfter)}
	if r.status != http.StatusOK {
		if err := json.Unmarshal(body, &r.refusal); err != nil {
			t.Fatalf("GET as %s: %d with body %q: %v", key, r.status, body, err)
		}
	}
	return r
}

// e2eValue returns the value of the gauge or counter name{labels} gathered
// from g (labels are name, value pairs; the series may have more), and
// whether that series exists.
func e2eValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			match := true
			for i := 0; i+1 < len(labels); i += 2 {
				match = match && have[labels[i]] == labels[i+1]
			}
			if match {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// e2eWait polls cond every 50 ms until it holds, failing the test after d.
// It returns how long it waited.
func e2eWait(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}
