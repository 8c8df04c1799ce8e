package enforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// ErrBadReadiness reports ReadinessSettings that cannot work.
var ErrBadReadiness = errors.New("enforce: bad readiness settings")

// ReadinessSettings configures a Readiness. Shared is required; the zero
// values of the other fields mean sensible defaults.
type ReadinessSettings struct {
	// Shared checks the shared store (the Redis store's Ready): nil when
	// decisions can be shared.
	Shared func(context.Context) error
	// Fallback says the instance decides on its own while Shared fails (a
	// fallback.Store, whatever its policy). False: a failing Shared makes
	// the instance not ready.
	Fallback bool
	// Timeout bounds each check. Zero means DefaultReadyTimeout.
	Timeout time.Duration
	// Interval is how often Run checks. Zero means DefaultReadyInterval.
	Interval time.Duration
}

// DefaultReadyInterval is ReadinessSettings.Interval's default.
const DefaultReadyInterval = 5 * time.Second

// Readiness answers /readyz for an instance that can decide without its
// shared store. It is ready while the instance can decide: the shared store
// answers, or it fails and the fallback decides. A failing shared store with
// a fallback is "degraded": the body says so, Degraded reports it, and
// /readyz?strict=1 answers 503. So a load balancer following /readyz keeps
// every instance during a Redis outage (they all fail together, and would
// all leave at once), while alerts and strict probes still see it.
//
//	200 {"status":"ready","degraded":false}
//	200 {"status":"ready","degraded":true,"error":"..."}     fallback decides
//	503 {"status":"not ready","degraded":true,"error":"..."} the same, ?strict=1
//
// Without a fallback a failing check is 503 whatever strict says.
type Readiness struct {
	s        ReadinessSettings
	degraded atomic.Bool // the last check failed (with a fallback)
}

// NewReadiness checks s and returns a Readiness.
func NewReadiness(s ReadinessSettings) (*Readiness, error) {
	switch {
	case s.Shared == nil:
		return nil, fmt.Errorf("%w: ReadinessSettings.Shared is nil", ErrBadReadiness)
	case s.Timeout < 0:
		return nil, fmt.Errorf("%w: ReadinessSettings.Timeout %v must not be negative", ErrBadReadiness, s.Timeout)
	case s.Interval < 0:
		return nil, fmt.Errorf("%w: ReadinessSettings.Interval %v must not be negative", ErrBadReadiness, s.Interval)
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultReadyTimeout
	}
	if s.Interval == 0 {
		s.Interval = DefaultReadyInterval
	}
	return &Readiness{s: s}, nil
}

// Check runs the shared check once. err is the check's error (nil: shared
// decisions work); ready reports whether the instance can decide anyway.
// It updates Degraded.
func (r *Readiness) Check(ctx context.Context) (ready bool, err error) {
	err = checkReady(ctx, r.s.Shared, r.s.Timeout)
	r.degraded.Store(err != nil && r.s.Fallback)
	return err == nil || r.s.Fallback, err
}

// Ready is the check as a func for other health protocols (gRPC health):
// nil while the instance can decide, shared or on its fallback.
func (r *Readiness) Ready(ctx context.Context) error {
	if ok, err := r.Check(ctx); !ok {
		return err
	}
	return nil
}

// Degraded reports whether the last Check found the shared store failing
// while the fallback decides (the throttled_degraded gauge).
func (r *Readiness) Degraded() bool { return r.degraded.Load() }

// Run checks every Interval until ctx ends, so that Degraded stays current
// without probes, and returns nil.
func (r *Readiness) Run(ctx context.Context) error {
	t := time.NewTicker(r.s.Interval)
	defer t.Stop()
	for {
		_, _ = r.Check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ServeHTTP answers /readyz as the type doc says.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !probeMethod(w, req) {
		return
	}
	ready, err := r.Check(req.Context())
	degraded := err != nil && r.s.Fallback
	body, code := readyBody{Status: "ready", Degraded: &degraded}, http.StatusOK
	if err != nil {
		body.Error = err.Error()
	}
	strict, _ := strconv.ParseBool(req.URL.Query().Get("strict"))
	if !ready || (degraded && strict) {
		body.Status, code = "not ready", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
