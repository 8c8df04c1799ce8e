package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/throttledhq/throttled/internal/wait"
)

// ErrBadConfig reports settings that cannot work; the message names them.
var ErrBadConfig = errors.New("retry: bad configuration")

// Settings configures a Transport. Zero values mean the defaults
// noted on each field (set in withDefaults and nowhere else).
type Settings struct {
	// MaxAttempts counts every try, the first included (default 3; 1
	// disables retries).
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff used when a refusal has no
	// Retry-After: before retry n the wait is uniform in
	// [0, min(MaxDelay, BaseDelay·2^(n-1))] ("full jitter").
	// Defaults 100ms and 5s.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After honoured (default 30s). A
	// refusal asking for a longer wait is returned to the caller at once:
	// retrying sooner than the server asked would only be refused again.
	MaxRetryAfter time.Duration
	// BudgetRatio is the share of requests that may be retries, averaged
	// over BudgetWindow (default 0.1: one retry per ten requests).
	BudgetRatio float64
	// BudgetMinPerSecond is a floor of retries per second allowed whatever
	// the ratio, so that a quiet client can still retry (default 10; its
	// burst is max(1, BudgetMinPerSecond)).
	BudgetMinPerSecond float64
	// BudgetWindow is how long a request's contribution to the budget lasts
	// (it decays exponentially with this time constant; default 10s).
	BudgetWindow time.Duration
	// RetryAll retries every method. By default only idempotent requests
	// are retried: GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or a request
	// with an Idempotency-Key (or X-Idempotency-Key) header.
	RetryAll bool
	// Sleep waits d or until ctx is done, returning ctx.Err() then
	// (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for the budget and HTTP-date Retry-After values
	// (default time.Now).
	Now func() time.Time
	// Rand returns a uniform number in [0, 1) for the jitter; it must be
	// safe for concurrent use (default math/rand/v2.Float64).
	Rand func() float64
}

func (s Settings) withDefaults() (Settings, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = 3
	}
	def(&s.BaseDelay, 100*time.Millisecond)
	def(&s.MaxDelay, 5*time.Second)
	def(&s.MaxRetryAfter, 30*time.Second)
	def(&s.BudgetWindow, 10*time.Second)
	if s.BudgetRatio == 0 {
		s.BudgetRatio = 0.1
	}
	if s.BudgetMinPerSecond == 0 {
		s.BudgetMinPerSecond = 10
	}
	if s.Sleep == nil {
		s.Sleep = wait.Sleep
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Rand == nil {
		s.Rand = rand.Float64
	}
	return s, s.validate()
}

func (s Settings) validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: Settings.%s %v must be %s", ErrBadConfig, field, v, want)
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 }
	switch {
	case s.MaxAttempts < 1:
		return bad("MaxAttempts", s.MaxAttempts, "≥ 1")
	case s.BaseDelay < 0:
		return bad("BaseDelay", s.BaseDelay, "> 0")
	case s.MaxDelay < s.BaseDelay:
		return bad("MaxDelay", s.MaxDelay, fmt.Sprintf("≥ BaseDelay (%v)", s.BaseDelay))
	case s.MaxRetryAfter < 0:
		return bad("MaxRetryAfter", s.MaxRetryAfter, "> 0")
	case s.BudgetWindow < 0:
		return bad("BudgetWindow", s.BudgetWindow, "> 0")
	case !finite(s.BudgetRatio):
		return bad("BudgetRatio", s.BudgetRatio, "a finite number ≥ 0")
	case !finite(s.BudgetMinPerSecond):
		return bad("BudgetMinPerSecond", s.BudgetMinPerSecond, "a finite number ≥ 0")
	}
	return nil
}

// Transport is an http.RoundTripper that retries requests refused with
// 429 Too Many Requests or 503 Service Unavailable. It waits as long as the
// refusal's Retry-After says (seconds or an HTTP-date, up to MaxRetryAfter),
// otherwise backs off exponentially with full jitter. Retries are limited by
// MaxAttempts and by a retry budget shared by every request through the
// transport, so that retries cannot multiply the load on a server that is
// already refusing it. Use one transport per upstream for per-upstream
// budgets.
//
// Only idempotent requests are retried (see Settings.RetryAll), and only
// when their body can be sent again: a request with a body needs GetBody
// (http.NewRequest sets it for in-memory bodies). Transport errors are
// returned as they are, not retried. Waits end early when the request's
// context is done; a wait that would outlast the context's deadline is not
// started and the refusal is returned instead. Responses that are retried
// are drained and closed; the last one is returned to the caller.
//
// A Transport is safe for concurrent use.
type Transport struct {
	next   http.RoundTripper
	s      Settings
	budget retryBudget
}

// NewTransport wraps next (nil means http.DefaultTransport).
func NewTransport(next http.RoundTripper, s Settings) (*Transport, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	if next == nil {
		next = http.DefaultTransport
	}
	t := &Transport{next: next, s: s}
	t.budget.init(s)
	return t, nil
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.budget.deposit(t.s.Now())
	retryable := t.retryable(req)
	r := req
	for attempt := 1; ; attempt++ {
		resp, err := t.next.RoundTrip(r)
		if err != nil || !retryable || attempt >= t.s.MaxAttempts {
			return resp, err
		}
		wait, ok := t.wait(resp, attempt)
		if !ok || t.pastDeadline(req.Context(), wait) || !t.budget.withdraw(t.s.Now()) {
			return resp, nil
		}
		next, err := rewind(req)
		if err != nil {
			return resp, nil // cannot send the body again: keep this answer
		}
		discard(resp)
		if err := t.s.Sleep(req.Context(), wait); err != nil {
			if next.Body != nil {
				next.Body.Close()
			}
			return nil, err
		}
		r = next
	}
}

// retryable reports whether req may be sent more than once.
func (t *Transport) retryable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if t.s.RetryAll {
		return true
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	// As net/http's own retry rule: the header's presence counts, even empty.
	_, k1 := req.Header["Idempotency-Key"]
	_, k2 := req.Header["X-Idempotency-Key"]
	return k1 || k2
}

// wait returns how long to wait before retrying after resp, and whether to
// retry at all.
func (t *Transport) wait(resp *http.Response, attempt int) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), t.s.Now()); ok {
		return d, d <= t.s.MaxRetryAfter
	}
	ceil := float64(t.s.BaseDelay) * math.Exp2(float64(attempt-1))
	ceil = math.Min(ceil, float64(t.s.MaxDelay))
	return time.Duration(t.s.Rand() * ceil), true
}

func (t *Transport) pastDeadline(ctx context.Context, wait time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && t.s.Now().Add(wait).After(dl)
}

// parseRetryAfter reads delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
// A date in the past means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var secs int64
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			secs = -1
			break
		}
		if secs = secs*10 + int64(c-'0'); secs > math.MaxInt64/int64(time.Second)/10 {
			return math.MaxInt64, true // absurdly long: longer than any cap
		}
	}
	if secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// rewind returns a copy of req with a fresh body.
func rewind(req *http.Request) (*http.Request, error) {
	r := *req
	if req.Body == nil || req.Body == http.NoBody {
		return &r, nil
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r.Body = b
	return &r, nil
}

// discard drains a little of resp's body, so the connection can be reused,
// and closes it.
func discard(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// retryBudget allows retries at BudgetRatio of requests (an exponentially
// decaying balance fed by each request), plus a reserve refilled at
// BudgetMinPerSecond.
type retryBudget struct {
	mu              sync.Mutex
	ratio, minRate  float64
	window, reserve float64 // window in seconds
	earned, spare   float64 // balances, in retries
	last            time.Time
}

func (b *retryBudget) init(s Settings) {
	b.ratio, b.minRate = s.BudgetRatio, s.BudgetMinPerSecond
	b.window = s.BudgetWindow.Seconds()
	b.reserve = max(1, s.BudgetMinPerSecond)
	b.spare = b.reserve
}

// advance decays earned and refills spare up to now. Call with mu held.
func (b *retryBudget) advance(now time.Time) {
	if b.last.IsZero() {
		b.last = now
		return
	}
	dt := now.Sub(b.last).Seconds()
	if dt <= 0 {
		return
	}
	b.last = now
	b.earned *= math.Exp(-dt / b.window)
	b.spare = min(b.reserve, b.spare+dt*b.minRate)
}

func (b *retryBudget) deposit(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	b.earned += b.ratio
}

func (b *retryBudget) withdraw(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	switch {
	case b.earned >= 1:
		b.earned--
	case b.spare >= 1:
		b.spare--
	default:
		return false
	}
	return true
}
