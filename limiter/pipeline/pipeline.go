package pipeline

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// Settings are a Pipeline's stages. Enforcer is required; every other zero
// field leaves its stage out.
type Settings struct {
	// Enforcer decides first: quota rules, tier admission, multipliers.
	Enforcer *enforce.Enforcer
	// Bulkheads bound each tier's requests in flight, by tier name.
	Bulkheads map[string]*bulkhead.Bulkhead
	// RouteBulkheads bound each route's requests in flight, by path
	// pattern (enforce.Path): a request takes the bulkhead of the most
	// specific pattern its path matches (on a tie, the first in sorted
	// order).
	RouteBulkheads map[string]*bulkhead.Bulkhead
	// Gate is the inner loop's adaptive concurrency limit.
	Gate *bulkhead.Gate
	// Breakers hold one circuit breaker per route, named BreakerPrefix and
	// the most specific of BreakerRoutes that the path matches, or
	// "default" when none does ("upstream:/api", "upstream:default").
	Breakers      *bulkhead.BreakerSet
	BreakerRoutes []string // path patterns (enforce.Path)
	// Metrics counts the pipeline's own 503s by tier, rule and reason
	// (*instrument.Metrics).
	Metrics interface {
		Count(tier, rule, reason string)
	}
	// Refusals is told of them (*instrument.RefusalLog); the client is "".
	Refusals interface {
		Refused(tier, rule, reason, client string)
	}
	// Answers is told of every answer a handler (the upstream) gives, as
	// its headers go out; the in-process signals read what it records.
	Answers Observer
	// Requests counts every request once, with the answer its client got
	// (*instrument.Requests): the Enforcer's refusal, a stage's 503 or
	// 499, or the handler's status (reason upstream_error from 500 up).
	Requests enforce.RequestCounter
}

// Observer is told of every request that reached the handler: the status
// of its answer; admitted, the time from the gate (from the handler's
// call when there is no gate) to the answer's headers, the wait for a
// permit plus the handler's response time; and handler, the handler's own
// time to its headers.
type Observer interface {
	Answered(status int, admitted, handler time.Duration)
}

// BreakerPrefix begins the name of every route's breaker: the rule of a
// breaker_open refusal and the name label of throttled_breaker_state.
const BreakerPrefix = "upstream:"

// Pipeline runs the stages of its Settings around a handler. Safe for
// concurrent use.
type Pipeline struct {
	s         Settings
	routes    enforce.Routes    // RouteBulkheads' patterns, sorted
	breakers  enforce.Routes    // BreakerRoutes
	breakerOf map[string]string // route pattern ("" none) → breaker name
	calls     sync.Pool         // of *call
	holds     bool              // a bulkhead or the gate may hold a request: Serve calls hold
}

// New checks s and returns its Pipeline, which keeps copies of its maps.
func New(s Settings) (*Pipeline, error) {
	if s.Enforcer == nil {
		return nil, errors.New("pipeline: Settings.Enforcer is required")
	}
	s.Bulkheads, s.RouteBulkheads = maps.Clone(s.Bulkheads), maps.Clone(s.RouteBulkheads)
	p := &Pipeline{s: s, holds: len(s.Bulkheads) > 0 || len(s.RouteBulkheads) > 0 || s.Gate != nil}
	p.routes = enforce.NewRoutes(slices.Sorted(maps.Keys(s.RouteBulkheads)))
	if s.Breakers != nil {
		p.breakers = enforce.NewRoutes(s.BreakerRoutes)
		p.breakerOf = map[string]string{"": BreakerPrefix + "default"}
		for _, r := range s.BreakerRoutes {
			if r == "" {
				return nil, errors.New("pipeline: Settings.BreakerRoutes: empty pattern")
			}
			p.breakerOf[r] = BreakerPrefix + r
		}
	}
	p.calls.New = func() any {
		c := &call{p: p}
		c.res = c.chk.Result()
		return c
	}
	return p, nil
}

// Handler returns next behind the whole pipeline: the net/http middleware.
func (p *Pipeline) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.Serve(w, r, next) })
}

// Serve runs the pipeline for one request: its refusals are written on w;
// an admitted request is handed to next, with a writer over w that puts the
// rate-limit headers on next's answer (and the request carrying the
// breaker's deadline, when there is a breaker). A front that owns its
// writer (Echo) installs the one next gets in its own.
//
// The writer next gets is the pipeline's until Serve returns: next must not
// keep it, as net/http requires of any ResponseWriter.
func (p *Pipeline) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	c := p.calls.Get().(*call)
	defer c.done()
	p.s.Enforcer.CheckIn(r.Context(), r, &c.chk)
	if !c.res.Allowed {
		c.res.WriteHeaders(w.Header())
		writeJSON(w, c.res.Status, c.res.Body())
		p.count(c.res.Tier, c.res.Status, c.res.AnswerReason())
		return
	}
	if p.holds && !p.hold(c, w, r) {
		return
	}
	p.handle(c, w, r, next)
}

// hold takes the bulkheads' permits, then the gate's, into c; on a refusal
// it answers it and reports false. In a dry run of the load the gate's
// shed passes (dryRunShed); the bulkheads always refuse.
func (p *Pipeline) hold(c *call, w http.ResponseWriter, r *http.Request) bool {
	ctx := r.Context()
	for _, bh := range [2]*bulkhead.Bulkhead{p.s.Bulkheads[c.res.Tier], p.routeBulkhead(r.URL.Path)} {
		if bh == nil {
			continue
		}
		pm, err := bh.Acquire(ctx)
		if err != nil { // a refusal for load: the quota stays spent
			p.refuseBulkhead(w, bh, c.res.Tier, err)
			return false
		}
		c.keep(pm)
	}
	if p.s.Gate == nil {
		return true
	}
	if p.s.Answers != nil {
		c.start = time.Now() // its wait for a permit counts
	}
	pm, err := p.s.Gate.Acquire(ctx, c.res.Priority)
	if err != nil && p.dryRunShed(c, err) {
		return true // without a permit: nothing to release
	}
	if err != nil {
		p.refuseGate(w, c.res.Tier, err)
		return false
	}
	c.keep(pm)
	return true
}

func (p *Pipeline) routeBulkhead(path string) *bulkhead.Bulkhead {
	if len(p.routes) == 0 {
		return nil
	}
	return p.s.RouteBulkheads[p.routes.Of(path, "")]
}

// handle hands r to next through the route's breaker, with the writer
// that puts the rate-limit headers on next's answer when there are any to
// put there, or that tells Answers or Requests of the answer; else w
// itself.
func (p *Pipeline) handle(c *call, w http.ResponseWriter, r *http.Request, next http.Handler) {
	hw := w
	if c.res.Limited && !(c.res.Hidden && c.res.Allowed) || p.s.Answers != nil || p.s.Requests != nil {
		if p.s.Answers != nil {
			c.called = time.Now()
			if c.start.IsZero() {
				c.start = c.called
			}
		}
		c.w, hw = w, c
	}
	if p.s.Breakers == nil {
		next.ServeHTTP(hw, r)
		p.answered(c)
		return
	}
	name := p.breakerOf[p.breakers.Of(r.URL.Path, "")]
	b, err := p.s.Breakers.Get(name)
	if err != nil { // the name is never empty: a breaker's metrics refused it
		next.ServeHTTP(hw, r) // the breaker, a protection, fails open
	} else if err = b.Serve(hw, r, next); err != nil { // next was not called
		p.refuseBreaker(w, b, c.res.Tier, err)
		return
	}
	p.answered(c)
}

// answered counts the handler's answer, once it has returned: its status
// (200 when it wrote none), reason upstream_error from 500 up.
func (p *Pipeline) answered(c *call) {
	c.answer(http.StatusOK)
	if p.s.Requests == nil {
		return
	}
	reason := c.res.AnswerReason()
	if c.status >= http.StatusInternalServerError {
		reason = instrument.ReasonUpstreamError
	}
	p.count(c.res.Tier, c.status, reason)
}

// Count counts in Settings.Requests one request that its front answered
// before the pipeline ran (the proxy's 413 for a declared body over its
// bound), so that every request is counted once.
func (p *Pipeline) Count(tier string, code int, reason string) { p.count(tier, code, reason) }

// count counts one request in Settings.Requests.
func (p *Pipeline) count(tier string, code int, reason string) {
	if p.s.Requests != nil {
		p.s.Requests.Count(tier, code, reason)
	}
}
