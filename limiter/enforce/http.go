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

// Pass is one request's decision, held by its caller from one request to
// the next (limiter/pipeline keeps one in each of its pooled calls):
// CheckIn decides into it in place, so that no Result is copied out, and
// on a store that copies the keys it keeps (limiter.KeyCopier) the bucket
// keys are made in memory the Pass keeps, not in memory taken from a pool
// and given back. The zero Pass is ready. A Pass serves one request at a
// time.
type Pass struct {
	ps pass
}

// CheckIn is Check deciding into h, which it empties first: the Result it
// returns is h's, and its next CheckIn overwrites it, so a caller that
// keeps anything of it beyond copies it.
func (e *Enforcer) CheckIn(ctx context.Context, r *http.Request, h *Pass) *Result {
	h.ps.reset(e)
	e.check(ctx, r, &h.ps)
	return &h.ps.res
}

// Result is the decision of h's last CheckIn (the zero Result before one).
func (h *Pass) Result() *Result { return &h.ps.res }

// reset empties ps for a check by e, keeping its held scratch. It clears
// only what a check fills, field by field: the pass is ≈ 1 KB, most of it
// the room for refunds (taken) and a held shed, which few checks use.
func (ps *pass) reset(e *Enforcer) {
	clear(ps.taken[:ps.n])
	if ps.shed.cr != nil {
		ps.shed = pendingShed{}
	}
	ps.res = Result{}
	ps.n, ps.more, ps.unlimited, ps.shedStood, ps.peek, ps.r, ps.last = 0, nil, false, false, false, nil, false
	if e.pooled && ps.held == nil {
		ps.held = newScratch()
	}
}

// scratch is the request's scratch: on a store that copies its keys, the
// pass's held one or else a pooled one (given back when the check is
// done); on any other store a new one, which the Result's headers use too.
func (ps *pass) scratch() *scratch {
	switch {
	case !ps.e.pooled:
		return newScratch()
	case ps.held == nil:
		return scratches.Get().(*scratch)
	}
	ps.held.buf = ps.held.room[:0]
	return ps.held
}

// doneWith ends the use of the request's scratch on a store that copies
// its keys: they were the store's to copy, and WriteHeaders makes its own.
func (ps *pass) doneWith() {
	if sc := ps.res.sc; ps.e.pooled && sc != nil {
		if sc != ps.held {
			sc.reuse()
		}
		ps.res.sc = nil
	}
}
