package pipeline_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// A situation is one thing that can happen to a request, and the answer
// every front must give to it.
type situation struct {
	name    string
	handler bool             // about the stages after the decision: needs a front that handles
	setup   func(f *fixture) // changes the parts before the pipeline is made
	run     func(f *fixture) *httptest.ResponseRecorder
	want    want
}

// want is what a situation's answer must be.
type want struct {
	status       int
	reason, rule string // of the JSON refusal (tier free); "" when the answer is none
	rateLimit    string // X-RateLimit-Limit: ours ("3"), the app's ("999") or none ("")
	counted      bool   // the pipeline counted and logged its refusal (free, rule, reason) once
	appCalls     int64
	// remaining is X-RateLimit-Remaining of one more request of k1 after
	// the situation, its holders let go: every request k1 sent that was
	// not refused for quota spent its quota, load refusals (and 499s)
	// included.
	remaining string
}

var situations = []situation{
	{name: "within quota", run: getItems(1),
		want: want{status: 200, rateLimit: "3", appCalls: 1, remaining: "1"}},
	{name: "over quota", run: getItems(quota + 1),
		want: want{status: 429, reason: "over_quota", rule: "per-key", rateLimit: "3", appCalls: quota, remaining: "0"}},
	{name: "over quota on redis", setup: (*fixture).redis, run: getItems(quota + 1),
		want: want{status: 429, reason: "over_quota", rule: "per-key", rateLimit: "3", appCalls: quota, remaining: "0"}},
	{name: "redis down: the local fallback decides", setup: (*fixture).redisDown, run: getItems(quota + 1),
		want: want{status: 429, reason: "over_quota", rule: "per-key", rateLimit: "3", appCalls: quota, remaining: "0"}},
	{name: "a shadow rule would refuse", setup: shadowRule, run: getItems(2),
		want: want{status: 200, rateLimit: "3", appCalls: 2, remaining: "0"}}, // the enforced rule's: a shadow rule stays out of client headers
	{name: "tier cap", setup: func(f *fixture) { f.control.rates = map[string]float64{"free": 1} }, run: getItems(2),
		want: want{status: 503, reason: "shed", rule: enforce.TierAdmissionRule, rateLimit: "1", appCalls: 1}},
	{name: "multiplier cut", setup: func(f *fixture) { f.control.mults = map[string]float64{"free": 0.01} }, run: getItems(2),
		want: want{status: 503, reason: "shed", rule: "per-key", rateLimit: "3", appCalls: 1}},
	{name: "a path no rule matches", run: func(f *fixture) *httptest.ResponseRecorder { return f.get("/health", 1) },
		want: want{status: 200, rateLimit: "999", appCalls: 1, remaining: "2"}},
	// A request no rule matches is the lowest tier's at the gate (it took
	// priority 0, the top, and counted under no tier).
	{name: "a path no rule matches, gate congested", handler: true, setup: gateHeld(time.Millisecond),
		run:  func(f *fixture) *httptest.ResponseRecorder { return f.get("/health", 1) },
		want: want{status: 503, reason: "shed", rule: "concurrency", counted: true, remaining: "2"}},
	{name: "gate shed", handler: true, setup: gateHeld(time.Millisecond), run: getItems(1),
		want: want{status: 503, reason: "shed", rule: "concurrency", counted: true, remaining: "1"}},
	{name: "client gone at the gate", handler: true, setup: gateHeld(time.Minute), run: goneWhile(waitingAtGate),
		want: want{status: 499, remaining: "1"}},
	{name: "tier bulkhead full", handler: true, setup: bulkheadHeld("free", 0), run: getItems(1),
		want: want{status: 503, reason: instrument.DecisionBulkhead, rule: "tier:free", counted: true, remaining: "1"}},
	{name: "route bulkhead full", handler: true, setup: bulkheadHeld("/api/export", 0),
		run:  func(f *fixture) *httptest.ResponseRecorder { return f.get("/api/export", 1) },
		want: want{status: 503, reason: instrument.DecisionBulkhead, rule: "route:/api/export", counted: true, remaining: "1"}},
	{name: "client gone at a bulkhead", handler: true, setup: bulkheadHeld("free", 1), run: goneWhile(waitingAtBulkhead),
		want: want{status: 499, remaining: "1"}},
	{name: "breaker open", handler: true, setup: breakers(time.Minute), run: breakerOpened,
		want: want{status: 503, reason: instrument.DecisionBreakerOpen, rule: "upstream:/api", counted: true, appCalls: 2, remaining: "0"}},
	{name: "breaker deadline", handler: true, setup: breakers(100 * time.Millisecond), run: breakerTimedOut,
		want: want{status: 503, reason: instrument.DecisionBreakerOpen, rule: "upstream:/api", counted: true, appCalls: 2, remaining: "0"}},
}

// TestSituations runs every situation through every front, on parts of
// its own, and judges the answer and what the pipeline did with the quota.
func TestSituations(t *testing.T) {
	for _, s := range situations {
		for _, fr := range fronts {
			if s.handler && !fr.handles() {
				continue
			}
			t.Run(s.name+"/"+fr.name(), func(t *testing.T) {
				f := newFixture(t)
				if s.setup != nil {
					s.setup(f)
				}
				f.build(fr)
				s.want.judge(t, f, s.run(f))
			})
		}
	}
}

func (w want) judge(t *testing.T, f *fixture, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	if rec.Code != w.status || h.Get(enforce.HeaderLimit) != w.rateLimit {
		t.Errorf("answer %d with X-RateLimit-Limit %q, want %d with %q; headers %v, body %s",
			rec.Code, h.Get(enforce.HeaderLimit), w.status, w.rateLimit, h, rec.Body)
	}
	if ours := w.rateLimit != "" && w.rateLimit != "999"; (h.Get(enforce.HeaderPolicy) != "") != ours {
		t.Errorf("RateLimit-Policy %q: want it %v", h.Get(enforce.HeaderPolicy), ours)
	}
	if app := h.Get("X-App") != ""; app != (w.status < 300) {
		t.Errorf("X-App %q: the app's own headers must stay on its answers, and only there", h.Get("X-App"))
	}
	w.judgeRefusal(t, rec)
	w.judgeCounts(t, f)
	for _, undo := range f.undo {
		undo()
	}
	if w.remaining != "" {
		if got := f.get("/api/items", 1).Header().Get(enforce.HeaderRemaining); got != w.remaining {
			t.Errorf("the next request's X-RateLimit-Remaining %q, want %q", got, w.remaining)
		}
	}
}

// judgeRefusal checks the JSON refusal and its Retry-After.
func (w want) judgeRefusal(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	got, ra := refusal(rec), rec.Header().Get(enforce.HeaderRetryAfter)
	if w.reason == "" {
		if got.Reason != "" || ra != "" {
			t.Errorf("a refusal (%+v, Retry-After %q) where none is due", got, ra)
		}
		return
	}
	if got.Reason != w.reason || got.Rule != w.rule || got.Tier != "free" || got.Error == "" ||
		got.RetryAfterSeconds < 1 || ra != strconv.FormatInt(got.RetryAfterSeconds, 10) ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("refusal %+v, Retry-After %q, Content-Type %q: want reason %s, rule %s, tier free, Retry-After as in the body",
			got, ra, rec.Header().Get("Content-Type"), w.reason, w.rule)
	}
}

// judgeCounts checks the app's calls, the pipeline's counts and Answers:
// one answer per app call on the fronts that run the pipeline.
func (w want) judgeCounts(t *testing.T, f *fixture) {
	t.Helper()
	if got := f.app.calls.Load(); got != w.appCalls {
		t.Errorf("the app was called %d times, want %d", got, w.appCalls)
	}
	c := f.counter
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[[3]string]int{}
	if w.counted {
		want[[3]string{"free", w.rule, w.reason}] = 1
	}
	if !equalCounts(c.counted, want) || !equalCounts(c.refused, want) {
		t.Errorf("counted %v, refusals logged %v; want %v", c.counted, c.refused, want)
	}
	answers := w.appCalls
	if !f.front.handles() { // a gateway serves the app itself: the pipeline's Answers hear none of it
		answers = 0
	}
	if int64(c.observed) != answers || c.badTimes > 0 {
		t.Errorf("Answers saw %d answers (%d timed admitted < handler), want %d",
			c.observed, c.badTimes, answers)
	}
	if answers > 0 && w.reason == "" && c.statuses[w.status] == 0 { // the app gave the last answer
		t.Errorf("Answers saw statuses %v; the last answer was %d", c.statuses, w.status)
	}
}

func equalCounts(a, b map[[3]string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// shadowRule adds a rule of 1 a minute that only records its refusals.
func shadowRule(f *fixture) {
	f.policy.Rules = append(f.policy.Rules, enforce.Rule{Name: "shadow", Path: "/api", Keys: []string{"header:X-API-Key"},
		Limit: 1, Period: time.Minute, Mode: enforce.ModeShadow})
}

// getItems sends n GETs of /api/items.
func getItems(n int) func(*fixture) *httptest.ResponseRecorder {
	return func(f *fixture) *httptest.ResponseRecorder { return f.get("/api/items", n) }
}

// gateHeld gives the pipeline a gate of limit 1 whose permit another call
// holds, and maxWait to wait for it.
func gateHeld(maxWait time.Duration) func(*fixture) {
	return func(f *fixture) {
		g, err := bulkhead.NewGate("upstream", bulkhead.GateSettings{Limit: 1, MinLimit: 1, MaxWait: maxWait}, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		pm, err := g.Acquire(context.Background(), 0)
		if err != nil {
			f.t.Fatal(err)
		}
		f.s.Gate, f.undo = g, append(f.undo, pm.Release)
	}
}

// bulkheadHeld gives the pipeline a bulkhead of limit 1 with queue places,
// for the tier or route named, whose permit another call holds.
func bulkheadHeld(name string, queue int) func(*fixture) {
	return func(f *fixture) {
		kind, m := "tier:", &f.s.Bulkheads
		if name[0] == '/' {
			kind, m = "route:", &f.s.RouteBulkheads
		}
		bh, err := bulkhead.New(kind+name, bulkhead.Settings{Limit: 1, MaxQueue: queue, MaxWait: time.Minute}, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		pm, err := bh.Acquire(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		*m = map[string]*bulkhead.Bulkhead{name: bh}
		f.undo = append(f.undo, pm.Release)
	}
}

func waitingAtGate(f *fixture) bool     { return f.s.Gate.Stats().Waiting == 1 }
func waitingAtBulkhead(f *fixture) bool { return f.s.Bulkheads["free"].Stats().Waiting == 1 }

// goneWhile sends a request whose client goes away once waiting says it
// waits.
func goneWhile(waiting func(*fixture) bool) func(*fixture) *httptest.ResponseRecorder {
	return func(f *fixture) *httptest.ResponseRecorder {
		ctx, cancel := context.WithCancel(context.Background())
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() { answer <- f.send(request("/api/items").WithContext(ctx)) }()
		eventually(f.t, "the request to wait", func() bool { return waiting(f) })
		cancel()
		return <-answer
	}
}

// breakers gives the pipeline a breaker for /api that opens on the second
// failure in a row, with deadline.
func breakers(deadline time.Duration) func(*fixture) {
	return func(f *fixture) {
		set, err := bulkhead.NewBreakerSet(bulkhead.BreakerSettings{ConsecutiveFailures: 2, OpenTimeout: time.Hour, Deadline: deadline}, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		f.s.Breakers, f.s.BreakerRoutes = set, []string{"/api"}
	}
}

// breakerOpened: the app fails twice (500, with our headers on its
// answer), then the breaker answers.
func breakerOpened(f *fixture) *httptest.ResponseRecorder {
	f.app.status.Store(http.StatusInternalServerError)
	for i := range 2 {
		if rec := f.get("/api/items", 1); rec.Code != 500 || rec.Header().Get(enforce.HeaderLimit) != "3" {
			f.t.Errorf("failure %d: %d, X-RateLimit-Limit %q; want the app's 500 with ours", i, rec.Code, rec.Header().Get(enforce.HeaderLimit))
		}
	}
	return f.get("/api/items", 1)
}

// breakerTimedOut: the app answers no headers within the deadline twice
// (its context ends; it answers 504), then the breaker answers.
func breakerTimedOut(f *fixture) *httptest.ResponseRecorder {
	f.app.slow.Store(true)
	for i := range 2 {
		if rec := f.get("/api/items", 1); rec.Code != 504 || rec.Header().Get(enforce.HeaderLimit) != "3" {
			f.t.Errorf("timeout %d: %d, X-RateLimit-Limit %q; want the app's 504 with ours", i, rec.Code, rec.Header().Get(enforce.HeaderLimit))
		}
	}
	f.app.slow.Store(false)
	return f.get("/api/items", 1)
}

// TestUpgrade: a connection upgrade (the handler hijacks it, or the
// upstream answers 101 through a reverse proxy) carries our rate-limit
// headers in place of the app's, once, and outlives the breaker's deadline:
// the 101 was its answer in time. A gateway has no breaker, and serves the
// upgrade itself.
func TestUpgrade(t *testing.T) {
	for _, fr := range fronts {
		if !fr.handles() {
			continue
		}
		t.Run(fr.name(), func(t *testing.T) {
			f := newFixture(t)
			breakers(upgradeDeadline)(f)
			f.build(fr)
			srv := httptest.NewServer(f.handler)
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, _ = io.WriteString(conn, "GET /api/ws HTTP/1.1\r\nHost: x\r\nX-API-Key: k1\r\nConnection: Upgrade\r\nUpgrade: probe\r\n\r\n")
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(br)
			if resp.StatusCode != 101 || string(rest) != "alive" || err != nil {
				t.Fatalf("%d, then %q (%v): want 101, then alive", resp.StatusCode, rest, err)
			}
			if got := resp.Header.Values(enforce.HeaderLimit); len(got) != 1 || got[0] != "3" || resp.Header.Get(enforce.HeaderPolicy) == "" {
				t.Errorf("X-RateLimit-Limit %q, RateLimit-Policy %q: want ours, once", got, resp.Header.Get(enforce.HeaderPolicy))
			}
		})
	}
}
