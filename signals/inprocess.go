package signals

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Defaults of InProcessSettings.
const (
	DefaultLatencyHistogram = "http_request_duration_seconds"
	DefaultRequestsCounter  = "http_requests_total"
	DefaultCodeLabel        = "code"
	DefaultQuantile         = 0.99
	DefaultAdmittedCounter  = "throttled_decisions_total"
)

// InProcessSettings configure an InProcess source. Zero values mean the
// defaults above.
type InProcessSettings struct {
	// LatencyHistogram names a classic histogram of durations in seconds;
	// all its series are summed by bucket. DefaultLatencyHistogram if empty.
	LatencyHistogram string
	// Quantile of LatencyHistogram to report, in (0, 1]; DefaultQuantile if 0.
	Quantile float64
	// RequestsCounter names a counter of requests; DefaultRequestsCounter if empty.
	RequestsCounter string
	// CodeLabel is the label of RequestsCounter holding the status code;
	// DefaultCodeLabel if empty.
	CodeLabel string
	// IsError says whether a status code counts as an error; IsServerError if nil.
	IsError func(code string) bool
	// AdmittedCounter names a counter of admitted requests with a "tier"
	// label; of its series with a "decision" label only those with
	// decision="allowed" or "delayed" count. DefaultAdmittedCounter if empty.
	AdmittedCounter string
	// SaturationGauge names a gauge whose largest series is the saturation
	// (read as is, not windowed); empty means the signal is Disabled. Its
	// series that carry an InstanceLabel are also read one by one
	// (Signals.SaturationByInstance).
	SaturationGauge string
	// Now stamps the values; time.Now if nil.
	Now func() time.Time
}

// IsServerError reports whether code is a 5xx status ("503", or "5xx").
func IsServerError(code string) bool { return len(code) == 3 && code[0] == '5' }

func (s InProcessSettings) withDefaults() InProcessSettings {
	if s.LatencyHistogram == "" {
		s.LatencyHistogram = DefaultLatencyHistogram
	}
	if s.Quantile == 0 {
		s.Quantile = DefaultQuantile
	}
	if s.RequestsCounter == "" {
		s.RequestsCounter = DefaultRequestsCounter
	}
	if s.CodeLabel == "" {
		s.CodeLabel = DefaultCodeLabel
	}
	if s.AdmittedCounter == "" {
		s.AdmittedCounter = DefaultAdmittedCounter
	}
	if s.IsError == nil {
		s.IsError = IsServerError
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}

func (s InProcessSettings) validate() error {
	if !(s.Quantile > 0 && s.Quantile <= 1) {
		return fmt.Errorf("%w: Quantile %v is not in (0, 1]", ErrInvalidSettings, s.Quantile)
	}
	for _, n := range [][2]string{
		{"LatencyHistogram", s.LatencyHistogram}, {"RequestsCounter", s.RequestsCounter},
		{"CodeLabel", s.CodeLabel}, {"SaturationGauge", s.SaturationGauge}, {"AdmittedCounter", s.AdmittedCounter},
	} {
		if n[1] != "" && !validName(n[1]) {
			return fmt.Errorf("%w: %s %q is not a valid Prometheus name", ErrInvalidSettings, n[0], n[1])
		}
	}
	return nil
}

// validName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	for i, c := range s {
		ok := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return s != ""
}

// InProcess computes the signals from a Gatherer: the latency quantile,
// the error ratio and the admitted rate by tier over the window since the
// previous Read, the saturation as it is now. It is safe for concurrent use; concurrent readers share the
// window, so one source should have one reader (the control loop).
type InProcess struct {
	g prometheus.Gatherer
	s InProcessSettings
	m *metrics

	mu        sync.Mutex
	read      bool                      // a previous Read gathered: a baseline exists
	prevHist  map[string]histSeries     // latency series at the previous read
	prevReqs  map[string]counterSeries  // request series at the previous read
	prevAdm   map[string]admittedSeries // admitted series at the previous read
	prevAdmAt time.Time                 // when prevAdm was read; zero before the first read
}

var _ Source = (*InProcess)(nil)

// NewInProcess returns a source reading g. Reads are counted in
// throttled_signals_reads_total{source="inprocess"} on reg (nothing is
// registered when reg is nil); reg may be the registry g gathers.
func NewInProcess(g prometheus.Gatherer, s InProcessSettings, reg prometheus.Registerer) (*InProcess, error) {
	if g == nil {
		return nil, fmt.Errorf("%w: Gatherer is nil", ErrInvalidSettings)
	}
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(reg, "inprocess")
	if err != nil {
		return nil, err
	}
	return &InProcess{g: g, s: s, m: m}, nil
}

// Read gathers the metrics and judges them (see the package doc). The first
// Read only sets the baseline: its latency, error ratio and admitted rates
// are NoBaseline.
// When gathering fails, the signals it could not read are QueryError and
// keep their baseline for the next read.
func (ip *InProcess) Read(ctx context.Context) (Signals, error) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	var mfs []*dto.MetricFamily
	err := ctx.Err()
	if err == nil {
		mfs, err = ip.g.Gather() // on error, mfs holds what could be gathered
	}
	if err != nil {
		err = fmt.Errorf("signals: gather: %w", err)
	}
	now := ip.s.Now()
	fams := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		fams[mf.GetName()] = mf
	}
	judge := func(name string, f func(*dto.MetricFamily, time.Time) Value) Value {
		if name != "" && fams[name] == nil && err != nil {
			return invalid(QueryError, now, err)
		}
		return f(fams[name], now)
	}
	s := Signals{
		Latency:    judge(ip.s.LatencyHistogram, ip.latency),
		ErrorRatio: judge(ip.s.RequestsCounter, ip.errorRatio),
		Saturation: judge(ip.s.SaturationGauge, ip.saturation),
	}
	if s.Saturation.Reason != Unsupported && ip.s.SaturationGauge != "" {
		s.SaturationByInstance = byInstance(fams[ip.s.SaturationGauge], now)
	}
	if n := ip.s.AdmittedCounter; fams[n] == nil && err != nil {
		s.Admitted = invalidRates(QueryError, now, err) // the baseline stays for the next read
	} else {
		s.Admitted = ip.admitted(fams[n], now)
	}
	if err == nil || len(mfs) > 0 {
		ip.read = true
	}
	ip.m.observe(s)
	errs := []error{err}
	for _, k := range Kinds() {
		if e := s.Get(k).Err; e != nil && e != err {
			errs = append(errs, e)
		}
	}
	if e := s.Admitted.Err; e != nil && e != err {
		errs = append(errs, e)
	}
	return s, errors.Join(errs...)
}

// latency is the quantile of the histogram's change since the last read.
func (ip *InProcess) latency(mf *dto.MetricFamily, now time.Time) Value {
	if mf == nil {
		ip.prevHist = nil
		return invalid(NoData, now, nil)
	}
	if mf.GetType() != dto.MetricType_HISTOGRAM {
		return invalid(Unsupported, now, fmt.Errorf("signals: latency: metric %q is a %s, want a histogram",
			mf.GetName(), mf.GetType()))
	}
	cur, err := histogramSeries(mf)
	if err != nil {
		return invalid(Unsupported, now, fmt.Errorf("signals: latency: %w", err))
	}
	prev, had := ip.prevHist, ip.read
	ip.prevHist = cur
	if !had {
		return invalid(NoBaseline, now, nil)
	}
	bounds, cum := histogramDelta(prev, cur)
	if len(cum) == 0 || cum[len(cum)-1] == 0 {
		return invalid(NoTraffic, now, nil)
	}
	return finite(bucketQuantile(ip.s.Quantile, bounds, cum), now)
}

// errorRatio is errors/requests counted since the last read.
func (ip *InProcess) errorRatio(mf *dto.MetricFamily, now time.Time) Value {
	if mf == nil {
		ip.prevReqs = nil
		return invalid(NoData, now, nil)
	}
	if mf.GetType() != dto.MetricType_COUNTER {
		return invalid(Unsupported, now, fmt.Errorf("signals: error_ratio: metric %q is a %s, want a counter",
			mf.GetName(), mf.GetType()))
	}
	cur := make(map[string]counterSeries, len(mf.GetMetric()))
	for _, m := range mf.GetMetric() {
		cur[seriesKey(m)] = counterSeries{v: m.GetCounter().GetValue(), isErr: ip.s.IsError(labelValue(m, ip.s.CodeLabel))}
	}
	prev, had := ip.prevReqs, ip.read
	ip.prevReqs = cur
	if !had {
		return invalid(NoBaseline, now, nil)
	}
	var total, errs float64
	for k, c := range cur {
		p, seen := prev[k]
		d := counterDelta(p.v, c.v, seen)
		total += d
		if c.isErr {
			errs += d
		}
	}
	if total == 0 {
		return invalid(NoTraffic, now, nil)
	}
	return finite(errs/total, now)
}

// saturation is the largest finite value of the gauge now.
func (ip *InProcess) saturation(mf *dto.MetricFamily, now time.Time) Value {
	switch {
	case ip.s.SaturationGauge == "":
		return invalid(Disabled, time.Time{}, nil)
	case mf == nil || len(mf.GetMetric()) == 0:
		return invalid(NoData, now, nil)
	case mf.GetType() != dto.MetricType_GAUGE:
		return invalid(Unsupported, now, fmt.Errorf("signals: saturation: metric %q is a %s, want a gauge",
			mf.GetName(), mf.GetType()))
	}
	var best Value // the largest finite value, else the first non-finite one
	for i, m := range mf.GetMetric() {
		v := finite(m.GetGauge().GetValue(), now)
		if i == 0 || (v.Valid && (!best.Valid || v.V > best.V)) {
			best = v
		}
	}
	return best
}

// byInstance is the value of each series of a gauge by its InstanceLabel;
// nil when no series has one.
func byInstance(mf *dto.MetricFamily, now time.Time) map[string]Value {
	var out map[string]Value
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != InstanceLabel {
				continue
			}
			if out == nil {
				out = map[string]Value{}
			}
			v := finite(m.GetGauge().GetValue(), now)
			if old, ok := out[l.GetValue()]; !ok || (v.Valid && (!old.Valid || v.V > old.V)) {
				out[l.GetValue()] = v
			}
		}
	}
	return out
}

// counterDelta is the increase of a counter from prev to cur: cur itself
// when the series is new or was reset (cur < prev), as rate() assumes.
func counterDelta(prev, cur float64, seen bool) float64 {
	if !seen || cur < prev || math.IsNaN(prev) {
		return cur
	}
	return cur - prev
}
