package throttled

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/instrument"
	"go.opentelemetry.io/otel/propagation"
)

// upstreamMetrics record the sidecar's calls to the protected service; the
// in-process signal source reads them.
type upstreamMetrics struct {
	requests *prometheus.CounterVec
	latency  prometheus.Histogram
	// admitted is the latency an admitted request sees: its wait for the
	// inner loop's permit plus the upstream's response time. The inner
	// loop keeps the upstream's own latency near its baseline by queueing
	// at its limit, so only this one tells the outer loop that the
	// upstream runs at capacity (queued) from one that is idle.
	admitted prometheus.Histogram
}

func newUpstreamMetrics(reg prometheus.Registerer) (*upstreamMetrics, error) {
	m := &upstreamMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: upstreamRequests,
			Help: "Requests proxied to the upstream, by status code (502: transport error)."}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: upstreamLatency,
			Help:    "Upstream response time (until headers) in seconds.",
			Buckets: latencyBuckets}),
		admitted: prometheus.NewHistogram(prometheus.HistogramOpts{Name: admittedLatency,
			Help:    "Time from the inner loop's gate to the upstream's response headers, in seconds: the wait for a permit plus the upstream response time.",
			Buckets: signalBuckets}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.admitted} {
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
		end := time.Now()
		m.latency.Observe(end.Sub(start).Seconds())
		if c := callOf(r.Context()); c != nil && !c.gateAt.IsZero() {
			start = c.gateAt
		}
		m.admitted.Observe(end.Sub(start).Seconds())
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

// limitBody bounds r's body to limit bytes. A body past it cancels the
// request's context with the *http.MaxBytesError as the cause, so that the
// upstream call stops and the upstream breaker does not count it (a client
// must not be able to open the breaker with oversized bodies); the error
// handler then answers 413. Call release when the request is over. A
// request without a body allocates nothing.
func limitBody(w http.ResponseWriter, r *http.Request, limit int64) (_ *http.Request, release func()) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, noRelease
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	r = r.WithContext(ctx)
	r.Body = &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), cancel: cancel}
	return r, func() { cancel(nil) }
}

func noRelease() {}

type limitedBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		b.cancel(tooBig)
	}
	return n, err
}

// refuseBody answers 413 to a body larger than limit.
func refuseBody(w http.ResponseWriter, limit int64) {
	writeJSON(w, http.StatusRequestEntityTooLarge, []byte(`{"error":"request body larger than max_body_bytes","reason":"body_too_large","max_body_bytes":`+
		strconv.FormatInt(limit, 10)+"}\n"))
}

// callKey carries a request's *proxyCall to the upstream metrics,
// ModifyResponse and the error handler: one context value, one request
// clone, whatever they need of it.
type callKey struct{}

// proxyCall is what the upstream's side needs of a proxied request.
type proxyCall struct {
	res    enforce.Result // its rate-limit headers and tier, if hasRes
	hasRes bool           // limited, or behind breakers
	gateAt time.Time      // when it asked the inner loop's gate for a permit; zero without a gate
}

// callOf is the request's proxyCall, nil when it has none.
func callOf(ctx context.Context) *proxyCall {
	c, _ := ctx.Value(callKey{}).(*proxyCall)
	return c
}

// result is the call's enforce.Result, nil when it has none to write.
func (c *proxyCall) result() *enforce.Result {
	if c == nil || !c.hasRes {
		return nil
	}
	return &c.res
}

// latencyBuckets are the upstream histogram's buckets, in seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// signalBuckets are finer: the controller reads a quantile of this
// histogram, interpolated within a bucket, and compares it with a fraction
// of its target.
var signalBuckets = []float64{.001, .0025, .005, .0075, .01, .015, .02, .025, .03, .04, .05, .06, .075,
	.1, .125, .15, .2, .25, .3, .4, .5, .75, 1, 2.5, 5, 10}

// proxyHandler enforces the rules, then the tier's bulkhead, then the inner
// loop's gate, then proxies to upstream. A request refused by a bulkhead
// gets its quota back and no rate-limit headers: it was not counted. One
// shed by the gate keeps its quota spent, as a shed by the multiplier does
// (the quota counts every request sent), so a client above its quota gets
// 429, not 503, whichever loop sheds. A proxied
// answer carries our rate-limit headers in place of the upstream's own.
func (s *Instance) proxyHandler(upstream *url.URL) http.Handler {
	transport := s.upstream.wrap(upstreamTransport(s.cfg.UpstreamTimeout.D()))
	if s.breakers != nil {
		transport = s.breakers.RoundTripper(transport, func(r *http.Request) string {
			return "upstream:" + s.breakerRoutes.Of(r.URL.Path, "default")
		})
	}
	rp := &httputil.ReverseProxy{
		Rewrite:        s.rewrite(upstream),
		Transport:      transport,
		ModifyResponse: oursWin,
		ErrorHandler:   s.upstreamError,
	}
	limit := s.cfg.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit { // declared: refused before it counts
			refuseBody(w, limit)
			return
		}
		r, release := limitBody(w, r, limit)
		defer release()
		res := s.enforcer.Check(r.Context(), r)
		if !res.Allowed {
			res.WriteHeaders(w.Header())
			writeJSON(w, res.Status, res.Body())
			return
		}
		for _, bh := range []*bulkhead.Bulkhead{s.bulk[res.Tier], s.routeBulk[s.routes.Of(r.URL.Path, "")]} {
			if bh == nil {
				continue
			}
			p, err := bh.Acquire(r.Context())
			if err != nil {
				s.enforcer.Refund(r.Context(), r, &res)
				s.refuseBulkhead(w, bh, res.Tier, err)
				return
			}
			defer p.Release()
		}
		var call proxyCall
		if s.gate != nil {
			at := time.Now()
			p, err := s.gate.Acquire(r.Context(), res.Priority)
			if err != nil {
				s.refuseGate(w, res.Tier, err)
				return
			}
			defer p.Release()
			call.gateAt = at
		}
		if res.Limited || s.breakers != nil {
			call.res, call.hasRes = res, true
		}
		if call.hasRes || !call.gateAt.IsZero() {
			r = r.WithContext(context.WithValue(r.Context(), callKey{}, &call))
		}
		rp.ServeHTTP(w, r)
	})
}

// rewrite points a request at upstream with X-Forwarded-*: from a trusted
// proxy the incoming X-Forwarded-For chain is extended (and its
// X-Forwarded-Host and -Proto kept), from anyone else it is replaced by the
// peer's address.
func (s *Instance) rewrite(upstream *url.URL) func(*httputil.ProxyRequest) {
	var trusted []netip.Prefix
	for _, p := range s.cfg.Identity.TrustedProxies {
		if pfx, err := identity.ParsePrefix(p); err == nil { // validated with the config
			trusted = append(trusted, pfx)
		}
	}
	return func(pr *httputil.ProxyRequest) {
		pr.SetURL(upstream)
		if s.tracer != nil { // the upstream's spans continue ours
			traceContext.Inject(pr.Out.Context(), propagation.HeaderCarrier(pr.Out.Header))
		}
		if !fromTrusted(pr.In.RemoteAddr, trusted) {
			pr.SetXForwarded()
			return
		}
		in := pr.In.Header
		if xff := in.Values("X-Forwarded-For"); len(xff) > 0 {
			pr.Out.Header["X-Forwarded-For"] = []string{strings.Join(xff, ", ")}
		}
		pr.SetXForwarded()
		for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
			if v := in.Get(h); v != "" {
				pr.Out.Header.Set(h, v)
			}
		}
	}
}

// fromTrusted reports whether the peer at addr (host:port) is a trusted proxy.
func fromTrusted(addr string, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// oursWin puts the request's rate-limit headers on the upstream's answer,
// replacing any the upstream sent under the same names, so that a client
// never sees two X-RateLimit-Limit values.
func oursWin(resp *http.Response) error {
	res := callOf(resp.Request.Context()).result()
	if res == nil {
		return nil
	}
	res.WriteHeaders(resp.Header) // sets each of its names, replacing the upstream's values
	return nil
}

// upstreamTransport keeps enough idle connections to the one upstream
// host for the requests in flight (net/http's default keeps 2, so a busy
// sidecar would dial for almost every request), and gives up on an
// upstream that has not answered (headers) within timeout, so that a hung
// upstream cannot hold a bulkhead or gate permit forever.
func upstreamTransport(timeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
	t.ResponseHeaderTimeout = timeout
	return t
}

// gateRule names the inner loop's gate in refusals and metrics.
const gateRule = "concurrency"

// refuseGate answers 503 with reason shed when the inner loop's limit
// refused the request (the lowest priority first).
func (s *Instance) refuseGate(w http.ResponseWriter, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrShed) {
		w.WriteHeader(499) // the client went away while waiting
		return
	}
	s.refuse503(w, "service overloaded, retry later", "shed", tier, gateRule, time.Second)
}

// refuseBulkhead answers 503 with reason bulkhead when a tier's bulkhead
// is full (or the wait for it ended); the rule is the bulkhead's name.
func (s *Instance) refuseBulkhead(w http.ResponseWriter, bh *bulkhead.Bulkhead, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrFull) {
		w.WriteHeader(499) // the client went away while waiting
		return
	}
	s.refuse503(w, "service busy, retry later", instrument.DecisionBulkhead, tier, bh.Name(), bh.RetryAfter())
}

// refuse503 answers a 503 given after the rules admitted the request,
// counts it in throttled_decisions_total as reason for tier and rule, and
// tells the refusal log. Retry-After is after, jittered.
func (s *Instance) refuse503(w http.ResponseWriter, msg, reason, tier, rule string, after time.Duration) {
	secs := wait.Jittered(after, rand.Int64N)
	s.metrics.Count(tier, rule, reason)
	s.refusals.Refused(tier, rule, reason, "")
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	body, _ := json.Marshal(enforce.Refusal{Error: msg, Reason: reason, RetryAfterSeconds: secs, Tier: tier, Rule: rule})
	writeJSON(w, http.StatusServiceUnavailable, append(body, '\n'))
}

// upstreamError answers a failed upstream call: 413 when the request's
// body passed max_body_bytes, a fast 503 while the route's breaker is
// open (the rule is the breaker's name), 502 otherwise.
func (s *Instance) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	res := callOf(r.Context()).result()
	if tooBig := (*http.MaxBytesError)(nil); errors.As(context.Cause(r.Context()), &tooBig) {
		if res != nil {
			res.WriteHeaders(w.Header())
		}
		refuseBody(w, tooBig.Limit)
		return
	}
	if errors.Is(err, bulkhead.ErrOpen) {
		name := "upstream:" + s.breakerRoutes.Of(r.URL.Path, "default")
		after := time.Second
		if b, _ := s.breakers.Get(name); b != nil {
			after = b.RetryAfter()
		}
		var tier string
		if res != nil {
			tier = res.Tier
		}
		s.refuse503(w, "upstream unavailable, retry later", instrument.DecisionBreakerOpen, tier, name, after)
		return
	}
	if res != nil {
		res.WriteHeaders(w.Header())
	}
	s.log.Warn("upstream", "err", err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		w.WriteHeader(http.StatusGatewayTimeout) // no answer within upstream_timeout
		return
	}
	w.WriteHeader(http.StatusBadGateway)
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
