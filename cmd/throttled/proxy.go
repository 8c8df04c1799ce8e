package main

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// upstreamMetrics record the sidecar's calls to the protected service; the
// in-process signal source reads them.
type upstreamMetrics struct {
	requests *prometheus.CounterVec
	latency  prometheus.Histogram
}

func newUpstreamMetrics(reg prometheus.Registerer) (*upstreamMetrics, error) {
	m := &upstreamMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: upstreamRequests,
			Help: "Requests proxied to the upstream, by status code (502: transport error)."}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: upstreamLatency,
			Help:    "Upstream response time (until headers) in seconds.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// RoundTrip times and counts one upstream call.
func (m *upstreamMetrics) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(r)
		m.latency.Observe(time.Since(start).Seconds())
		code := "502"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.requests.WithLabelValues(code).Inc()
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// proxyHandler enforces the rules, then the tier's bulkhead, then proxies
// to upstream.
func (s *stack) proxyHandler(upstream *url.URL) http.Handler {
	transport := s.upstream.wrap(upstreamTransport())
	if s.breakers != nil {
		transport = s.breakers.RoundTripper(transport, func(r *http.Request) string {
			return "upstream:" + s.breakerRoutes.Of(r.URL.Path, "default")
		})
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
		},
		Transport:    transport,
		ErrorHandler: s.upstreamError,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := s.enforcer.Check(r.Context(), r)
		res.WriteHeaders(w.Header())
		if !res.Allowed {
			writeJSON(w, res.Status, res.Body())
			return
		}
		for _, bh := range []*bulkhead.Bulkhead{s.bulk[res.Tier], s.routeBulk[s.routes.Of(r.URL.Path, "")]} {
			if bh == nil {
				continue
			}
			p, err := bh.Acquire(r.Context())
			if err != nil {
				s.refuseBulkhead(w, bh, res.Tier, err)
				return
			}
			defer p.Release()
		}
		if s.gate != nil {
			p, err := s.gate.Acquire(r.Context(), res.Priority)
			if err != nil {
				s.refuseGate(w, res.Tier, err)
				return
			}
			defer p.Release()
		}
		rp.ServeHTTP(w, r)
	})
}

// upstreamTransport keeps enough idle connections to the one upstream
// host for the requests in flight (net/http's default keeps 2, so a busy
// sidecar would dial for almost every request).
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
	return t
}

// refuseGate answers 503 with reason shed when the inner loop's limit
// refused the request (the lowest priority first).
func (s *stack) refuseGate(w http.ResponseWriter, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrShed) {
		w.WriteHeader(499) // the client went away while waiting
		return
	}
	secs := wait.Jittered(time.Second, rand.Int64N)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	body, _ := json.Marshal(enforce.Refusal{Error: "service overloaded, retry later", Reason: "shed",
		RetryAfterSeconds: secs, Tier: tier, Rule: "concurrency"})
	writeJSON(w, http.StatusServiceUnavailable, append(body, '\n'))
}

// refuseBulkhead answers 503 with reason bulkhead when a tier's bulkhead
// is full (or the wait for it ended).
func (s *stack) refuseBulkhead(w http.ResponseWriter, bh *bulkhead.Bulkhead, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrFull) {
		w.WriteHeader(499) // the client went away while waiting
		return
	}
	secs := wait.Jittered(bh.RetryAfter(), rand.Int64N)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	body := `{"error":"service busy, retry later","reason":"bulkhead","retry_after_seconds":` +
		strconv.FormatInt(secs, 10) + `,"tier":"` + tier + `","rule":""}` + "\n"
	writeJSON(w, http.StatusServiceUnavailable, []byte(body))
}

// upstreamError answers a failed upstream call: a fast 503 while the
// route's breaker is open, 502 otherwise.
func (s *stack) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, bulkhead.ErrOpen) {
		b, _ := s.breakers.Get("upstream:" + s.breakerRoutes.Of(r.URL.Path, "default"))
		secs := wait.Jittered(time.Second, rand.Int64N)
		if b != nil {
			secs = wait.Jittered(b.RetryAfter(), rand.Int64N)
		}
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeJSON(w, http.StatusServiceUnavailable, []byte(`{"error":"upstream unavailable, retry later","reason":"breaker_open","retry_after_seconds":`+
			strconv.FormatInt(secs, 10)+"}\n"))
		return
	}
	s.log.Warn("upstream", "err", err)
	w.WriteHeader(http.StatusBadGateway)
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
