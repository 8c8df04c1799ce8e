package signals

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
)

// Defaults of PrometheusSettings.
const (
	// DefaultLatencyQuery is the p99 of http_request_duration_seconds over
	// 1m, of every series: the default query is LatencyQuery(Selector).
	DefaultLatencyQuery = `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m])))`
	// DefaultErrorRatioQuery is the share of 5xx in http_requests_total over
	// 1m, of every series: the default query is ErrorRatioQuery(Selector).
	// A service that has never answered 5xx has no such series: "or
	// vector(0)" makes its ratio 0 rather than an empty (invalid) result,
	// while no traffic at all still leaves the denominator empty (invalid).
	DefaultErrorRatioQuery = `(sum(rate(http_requests_total{code=~"5.."}[1m])) or vector(0)) / sum(rate(http_requests_total[1m]))`
	// DefaultAdmittedQuery is the rate of requests throttled allowed over
	// 1m, by tier.
	DefaultAdmittedQuery = `sum by (tier) (rate(throttled_decisions_total{decision=~"allowed|delayed"}[1m]))`
	// DefaultTimeout bounds each query.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxAge is how far a sample's timestamp may be from now.
	DefaultMaxAge = 30 * time.Second
)

// PrometheusSettings configure a Prometheus source. Zero values mean the
// defaults above.
type PrometheusSettings struct {
	// URL of the Prometheus HTTP API, e.g. http://prometheus:9090. Required.
	URL string
	// Selector picks the protected service's series for the default
	// latency and error-ratio queries: PromQL label matchers such as
	// `job="checkout"` (braces optional). Required while either default is
	// in use: unfiltered, they would average every service this
	// Prometheus scrapes.
	Selector string
	// LatencyQuery yields the latency in seconds; LatencyQuery(Selector) if empty.
	LatencyQuery string
	// ErrorRatioQuery yields failed/all requests; ErrorRatioQuery(Selector) if empty.
	ErrorRatioQuery string
	// SaturationQuery yields saturation; empty means the signal is Disabled.
	SaturationQuery string
	// AdmittedQuery yields the admitted requests per second as an instant
	// vector with a "tier" label; DefaultAdmittedQuery if empty.
	AdmittedQuery string
	// Timeout bounds each query, sent both as the request deadline and as the
	// server's evaluation timeout; DefaultTimeout if 0.
	Timeout time.Duration
	// MaxAge is how far a sample's timestamp may be from Now before the value
	// is Stale; DefaultMaxAge if 0.
	MaxAge time.Duration
	// RoundTripper carries the requests (auth, TLS); api.DefaultRoundTripper if nil.
	RoundTripper http.RoundTripper
	// Now is the clock samples are judged against; time.Now if nil.
	Now func() time.Time
}

// withDefaults fills in the zero values; s is valid.
func (s PrometheusSettings) withDefaults() PrometheusSettings {
	sel := ""
	if s.Selector != "" {
		sel, _ = ParseSelector(s.Selector) // checked by validate
	}
	if s.LatencyQuery == "" {
		s.LatencyQuery = LatencyQuery(sel)
	}
	if s.ErrorRatioQuery == "" {
		s.ErrorRatioQuery = ErrorRatioQuery(sel)
	}
	if s.AdmittedQuery == "" {
		s.AdmittedQuery = DefaultAdmittedQuery
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxAge == 0 {
		s.MaxAge = DefaultMaxAge
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}

func (s PrometheusSettings) validate() error {
	if s.URL == "" {
		return fmt.Errorf("%w: URL is empty", ErrInvalidSettings)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: URL %q is not an http(s)://host[:port] URL", ErrInvalidSettings, s.URL)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("%w: Timeout %s is negative", ErrInvalidSettings, s.Timeout)
	}
	if s.MaxAge < 0 {
		return fmt.Errorf("%w: MaxAge %s is negative", ErrInvalidSettings, s.MaxAge)
	}
	if s.Selector != "" {
		_, err := ParseSelector(s.Selector)
		return err
	}
	if s.LatencyQuery == "" || s.ErrorRatioQuery == "" {
		return fmt.Errorf("%w: Selector is empty while a default query is in use (LatencyQuery or ErrorRatioQuery "+
			"unset): it would read every service this Prometheus scrapes; give the service's label matchers, "+
			`e.g. job="checkout"`, ErrInvalidSettings)
	}
	return nil
}

// Prometheus reads signals with PromQL instant queries. It is safe for
// concurrent use.
type Prometheus struct {
	api      v1.API
	queries  [3]string // by Kind; empty: Disabled
	admitted string    // the per-tier query
	timeout  time.Duration
	maxAge   time.Duration
	now      func() time.Time
	m        *metrics
}

var _ Source = (*Prometheus)(nil)

// NewPrometheus returns a source querying the Prometheus at s.URL. Reads are
// counted in throttled_signals_reads_total{source="prometheus"} on reg
// (nothing is registered when reg is nil).
func NewPrometheus(s PrometheusSettings, reg prometheus.Registerer) (*Prometheus, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	c, err := api.NewClient(api.Config{Address: s.URL, RoundTripper: s.RoundTripper})
	if err != nil {
		return nil, fmt.Errorf("%w: URL %q: %v", ErrInvalidSettings, s.URL, err)
	}
	m, err := newMetrics(reg, "prometheus")
	if err != nil {
		return nil, err
	}
	return &Prometheus{
		api:      v1.NewAPI(c),
		queries:  [3]string{Latency: s.LatencyQuery, ErrorRatio: s.ErrorRatioQuery, Saturation: s.SaturationQuery},
		admitted: s.AdmittedQuery,
		timeout:  s.Timeout,
		maxAge:   s.MaxAge,
		now:      s.Now,
		m:        m,
	}, nil
}

// Queries returns the queries in use by signal ("latency", "error_ratio",
// "saturation" when set) and "admitted", for logs and status pages.
func (p *Prometheus) Queries() map[string]string {
	out := map[string]string{"admitted": p.admitted}
	for _, k := range Kinds() {
		if p.queries[k] != "" {
			out[k.String()] = p.queries[k]
		}
	}
	return out
}

// Read runs the configured queries concurrently, each bounded by Timeout,
// and judges their answers (see the package doc). The error joins the
// Err of every value that has one.
func (p *Prometheus) Read(ctx context.Context) (Signals, error) {
	var vals [3]Value
	var s Signals
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Admitted = p.queryRates(ctx)
	}()
	for _, k := range Kinds() {
		if p.queries[k] == "" {
			vals[k] = invalid(Disabled, time.Time{}, nil)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals[k] = p.query(ctx, k)
		}()
	}
	wg.Wait()
	var errs []error
	for _, k := range Kinds() {
		s.set(k, vals[k])
		if vals[k].Err != nil {
			errs = append(errs, vals[k].Err)
		}
	}
	if s.Admitted.Err != nil {
		errs = append(errs, s.Admitted.Err)
	}
	p.m.observe(s)
	return s, errors.Join(errs...)
}

// query runs the query of signal k and judges the answer.
func (p *Prometheus) query(ctx context.Context, k Kind) Value {
	q := p.queries[k]
	res, err := p.run(ctx, q)
	now := p.now()
	if err != nil {
		return invalid(QueryError, now, fmt.Errorf("signals: %s query %q: %w", k, q, err))
	}
	v := reduce(res, now)
	if v.Reason == Unsupported {
		v.Err = fmt.Errorf("signals: %s query %q: %w", k, q, v.Err)
	}
	if v.Valid && (now.Sub(v.At) > p.maxAge || v.At.Sub(now) > p.maxAge) {
		return invalid(Stale, v.At, nil)
	}
	return v
}

// queryRates runs the per-tier admitted query and judges the answer.
func (p *Prometheus) queryRates(ctx context.Context) Rates {
	res, err := p.run(ctx, p.admitted)
	now := p.now()
	if err != nil {
		return invalidRates(QueryError, now, fmt.Errorf("signals: admitted query %q: %w", p.admitted, err))
	}
	r := reduceRates(res, now, p.maxAge)
	if r.Err != nil {
		r.Err = fmt.Errorf("signals: admitted query %q: %w", p.admitted, r.Err)
	}
	return r
}

// run runs one instant query, bounded by the timeout.
func (p *Prometheus) run(ctx context.Context, q string) (model.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	// No evaluation time: the server evaluates at its own now, and the
	// sample's timestamp tells how current the answer is.
	res, _, _, err := p.api.Query(ctx, q, time.Time{}, v1.WithTimeout(p.timeout))
	return res, err
}

// reduce turns a query result into one Value: a scalar as is, a vector as
// its largest finite sample (see the package doc). now stamps answers that
// carry no time.
func reduce(res model.Value, now time.Time) Value {
	switch r := res.(type) {
	case *model.Scalar:
		return finite(float64(r.Value), r.Timestamp.Time())
	case model.Vector:
		if len(r) == 0 {
			return invalid(NoData, now, nil)
		}
		var best, bad Value
		for _, smp := range r {
			v := finite(float64(smp.Value), smp.Timestamp.Time())
			switch {
			case v.Valid && (!best.Valid || v.V > best.V):
				best = v
			case !v.Valid && bad.Reason == OK:
				bad = v
			}
		}
		if best.Valid {
			return best
		}
		return bad
	case nil:
		return invalid(Unsupported, now, errors.New("no result"))
	default:
		return invalid(Unsupported, now, fmt.Errorf("result is a %s, want a scalar or an instant vector", res.Type()))
	}
}
