package throttled

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the handler's (the upstream's) answers; the in-process
// signal source reads the admitted latency and the answers by code.
const (
	upstreamLatency  = "throttled_upstream_request_duration_seconds"
	admittedLatency  = "throttled_admitted_request_duration_seconds"
	upstreamRequests = "throttled_upstream_requests_total"
)

// answerMetrics record the answers of what throttled protects, the
// upstream of the proxy or the handler behind Middleware and Echo: a
// pipeline.Observer.
type answerMetrics struct {
	requests *prometheus.CounterVec
	codes    [600]atomic.Pointer[prometheus.Counter] // requests by status code, resolved once
	latency  prometheus.Histogram
	// admitted is the latency an admitted request sees: its wait for the
	// inner loop's permit plus the handler's response time. The inner loop
	// keeps the handler's own latency near its baseline by queueing at its
	// limit, so only this one tells the outer loop that the handler runs at
	// capacity (queued) from one that is idle.
	admitted prometheus.Histogram
}

func newAnswerMetrics(reg prometheus.Registerer) (*answerMetrics, error) {
	m := &answerMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: upstreamRequests,
			Help: "Requests answered by the upstream (the handler behind the middleware), by status code (502: the proxy's transport error, 504: no answer in time)."}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: upstreamLatency,
			Help:    "Upstream (handler) response time, until headers, in seconds.",
			Buckets: latencyBuckets}),
		admitted: prometheus.NewHistogram(prometheus.HistogramOpts{Name: admittedLatency,
			Help:    "Time from the inner loop's gate to the upstream's (the handler's) response headers, in seconds: the wait for a permit plus the response time.",
			Buckets: signalBuckets}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.admitted} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Answered records one answer (pipeline.Observer).
func (m *answerMetrics) Answered(status int, admitted, handler time.Duration) {
	m.latency.Observe(handler.Seconds())
	m.admitted.Observe(admitted.Seconds())
	if status < 0 || status >= len(m.codes) {
		m.requests.WithLabelValues(strconv.Itoa(status)).Inc()
		return
	}
	c := m.codes[status].Load()
	if c == nil { // racing callers resolve the same child
		r := m.requests.WithLabelValues(strconv.Itoa(status))
		c = &r
		m.codes[status].Store(c)
	}
	(*c).Inc()
}

// latencyBuckets are the upstream histogram's buckets, in seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// signalBuckets are finer: the controller reads a quantile of this
// histogram, interpolated within a bucket, and compares it with a fraction
// of its target.
var signalBuckets = []float64{.001, .0025, .005, .0075, .01, .015, .02, .025, .03, .04, .05, .06, .075,
	.1, .125, .15, .2, .25, .3, .4, .5, .75, 1, 2.5, 5, 10}
