package signals_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/signals"
)

// The in-process source reads the service's own registry: each Read
// reports the window since the previous one.
func ExampleInProcess() {
	reg := prometheus.NewRegistry()
	lat := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "http_request_duration_seconds", Help: "Request latency.", Buckets: []float64{0.1, 0.5, 1}})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total", Help: "Requests by code."}, []string{"code"})
	reg.MustRegister(lat, reqs)
	serve := func(n int, seconds float64, code string) {
		for i := 0; i < n; i++ {
			lat.Observe(seconds)
			reqs.WithLabelValues(code).Inc()
		}
	}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src, err := signals.NewInProcess(reg, signals.InProcessSettings{Now: func() time.Time { return now }}, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	serve(10, 0.05, "200")
	s, _ := src.Read(ctx) // the baseline
	fmt.Println("t0:", s.Latency, s.ErrorRatio)

	now = now.Add(5 * time.Second)
	serve(95, 0.05, "200")
	serve(5, 0.8, "503")
	s, _ = src.Read(ctx)
	fmt.Printf("t5: p99 %.3fs, errors %.2f, saturation %s\n", s.Latency.V, s.ErrorRatio.V, s.Saturation)

	now = now.Add(5 * time.Second)
	s, _ = src.Read(ctx)
	fmt.Println("t10:", s.Latency, s.ErrorRatio)
	// Output:
	// t0: invalid (no_baseline) invalid (no_baseline)
	// t5: p99 0.900s, errors 0.05, saturation invalid (disabled)
	// t10: invalid (no_traffic) invalid (no_traffic)
}
