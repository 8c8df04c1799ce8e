package enforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrNotReady is wrapped by the error of a readiness check that got no
// answer within its timeout.
var ErrNotReady = errors.New("enforce: not ready")

// DefaultReadyTimeout bounds a readiness check when ReadyHandler is given 0.
const DefaultReadyTimeout = time.Second

// HealthHandler answers liveness probes (/healthz): 200 "ok" while the
// process serves HTTP at all. It checks no dependency, so that an orchestrator
// does not restart instances because Redis is down.
func HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !probeMethod(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// ReadyHandler answers readiness probes (/readyz): 200 {"status":"ready"}
// when ready returns nil within timeout, else 503
// {"status":"not ready","error":"..."}. A ready func that ignores its
// context still gets a 503 at the timeout. Zero timeout means
// DefaultReadyTimeout; a nil ready or a negative timeout panics.
//
// This handler is strict: a failing check means not ready. An instance with
// a fallback still decides while Redis is down, and every instance would
// leave the load balancer at once; serve a Readiness there instead.
func ReadyHandler(ready func(context.Context) error, timeout time.Duration) http.Handler {
	if ready == nil {
		panic("enforce: ReadyHandler: ready func is nil")
	}
	if timeout < 0 {
		panic(fmt.Sprintf("enforce: ReadyHandler: timeout %v must not be negative", timeout))
	}
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !probeMethod(w, r) {
			return
		}
		err := checkReady(r.Context(), ready, timeout)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		body := readyBody{Status: "ready"}
		if err != nil {
			body = readyBody{Status: "not ready", Error: err.Error()}
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
}

type readyBody struct {
	Status   string `json:"status"`
	Degraded *bool  `json:"degraded,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Probe is the readiness rule of ReadyHandler for other health protocols
// (the gRPC health service): nil when ready returns nil within timeout (0
// means DefaultReadyTimeout), else why not. A ready func that ignores its
// context is given up on at the timeout.
func Probe(ctx context.Context, ready func(context.Context) error, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	return checkReady(ctx, ready, timeout)
}

// checkReady runs ready under timeout, and gives up at the timeout even if
// ready does not return.
func checkReady(ctx context.Context, ready func(context.Context) error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ready(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: no answer within %v: %w", ErrNotReady, timeout, ctx.Err())
	}
}

// probeMethod allows GET and HEAD, answering 405 to anything else.
func probeMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// Middleware enforces e on every request before next (net/http adapter):
// Check, then WriteHeaders, then next or the refusal. It runs the decision
// stage alone: limiter/pipeline's Handler is the whole request path
// (bulkheads, the inner loop's gate, breakers) around it.
func (e *Enforcer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ps pass
		e.check(r.Context(), r, &ps)
		res := &ps.res
		res.WriteHeaders(w.Header())
		if !res.Allowed {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(res.Status)
			_, _ = w.Write(res.Body())
			return
		}
		next.ServeHTTP(w, r)
	})
}
