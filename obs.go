package throttled

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/instrument"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// registerInfo registers throttled_build_info, throttled_config_version,
// throttled_requests_total (every front counts its requests in it), and
// throttled_effective_multiplier and throttled_limit (read at scrape time).
func (s *Instance) registerInfo() error {
	var err error
	if s.requests, err = instrument.NewRequests(s.reg); err != nil {
		return err
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "throttled_build_info",
		Help: "1, labelled with the build: Version, Go version and VCS revision."},
		[]string{"version", "goversion", "revision"})
	build.WithLabelValues(Version, runtime.Version(), revision()).Set(1)
	s.configVersion = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttled_config_version",
		Help: "Version of the admin configuration in force on this instance (it counts writes; 0 until one is applied)."})
	for _, c := range []prometheus.Collector{build, s.configVersion, instrument.NewEffectiveMultipliers(s.effective),
		instrument.NewLimits(s.limits)} {
		if err := s.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// revision is the VCS revision the binary was built from, "unknown"
// without one.
func revision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" {
				return st.Value
			}
		}
	}
	return "unknown"
}

// limits are the limits this instance's enforcer has in force, for
// throttled_limit; none before it is made.
func (s *Instance) limits() []instrument.Limit {
	if s.enforcer == nil {
		return nil
	}
	return s.enforcer.Limits()
}

// effective is the multiplier this instance enforces on each tier and its
// source, for throttled_effective_multiplier.
func (s *Instance) effective() []instrument.Effective {
	if s.mults == nil {
		return nil
	}
	origin := s.mults.origin()
	tiers := s.tierNames()
	out := make([]instrument.Effective, 0, len(tiers))
	for _, t := range tiers {
		if m, ok := s.mults.pin(t); ok {
			out = append(out, instrument.Effective{Tier: t, Multiplier: m, Source: instrument.SourcePin})
			continue
		}
		out = append(out, instrument.Effective{Tier: t, Multiplier: s.mults.src.Multiplier(t), Source: origin})
	}
	return out
}

// startTracing sets up an OTLP/HTTP trace exporter when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set; the exporter reads the other standard OTEL_* variables (headers,
// timeout, compression), and an http:// endpoint is plain HTTP. Proxied
// requests then get a server span each (see traced). It returns the
// function that flushes and stops the exporter.
func (s *Instance) startTracing(ctx context.Context) (func(context.Context) error, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "throttled"),
		attribute.String("service.version", Version)), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	s.tracer = tp.Tracer("github.com/throttledhq/throttled")
	s.log.Info("tracing: OTLP/HTTP exporter on")
	return tp.Shutdown, nil
}

// traceContext is the W3C trace context propagation (traceparent).
var traceContext = propagation.TraceContext{}

// traced starts a server span named name for every request to h, a child
// of the caller's traceparent when it sends one; the enforcer adds its
// decision to it. Without tracing h is returned as is.
func (s *Instance) traced(name string, h http.Handler) http.Handler {
	if s.tracer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := s.tracer.Start(ctx, name, oteltrace.WithSpanKind(oteltrace.SpanKindServer),
			oteltrace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
		if sw.code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.code))
		}
	})
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the writer (flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
