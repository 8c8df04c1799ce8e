package pipeline_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/echolimit"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/proxy"
)

// A front puts throttled in front of an application as one way of
// running it does: the in-process fronts and the sidecar's proxy run the
// pipeline, the gateways (gateways_test.go) ask the rate limit service or
// POST /v1/check. Every situation runs through every front that it applies
// to (see TestSituations).
type front interface {
	name() string
	// serve returns app behind f's parts, p the pipeline made of them, as
	// the front serves it: the test sends its requests to that handler and
	// judges the answers.
	serve(f *fixture, p *pipeline.Pipeline, app http.Handler) http.Handler
	// handles reports whether the front runs the pipeline's stages after
	// the decision around the handler (or the upstream): the fronts that
	// stop after the decision stages (the gateways, which serve the app
	// themselves) skip the situations that need them.
	handles() bool
}

var fronts = []front{netHTTP{}, echoFront{}, reverseProxy{}, checkGateway, rlsGateway}

// netHTTP is Pipeline.Handler, the net/http middleware.
type netHTTP struct{}

func (netHTTP) name() string  { return "net/http" }
func (netHTTP) handles() bool { return true }
func (netHTTP) serve(_ *fixture, p *pipeline.Pipeline, app http.Handler) http.Handler {
	return p.Handler(app)
}

// echoFront is echolimit.Middleware on an Echo app whose every route is app.
type echoFront struct{}

func (echoFront) name() string  { return "echo" }
func (echoFront) handles() bool { return true }
func (echoFront) serve(_ *fixture, p *pipeline.Pipeline, app http.Handler) http.Handler {
	e := echo.New()
	e.Use(echolimit.Middleware(p))
	e.Any("/*", echo.WrapHandler(app))
	return e
}

// reverseProxy is the sidecar (package proxy) in front of app on a real
// listener: its error handler answers 504 to a timeout (the breaker's
// deadline among them) and 502 to any other transport error.
type reverseProxy struct{}

func (reverseProxy) name() string  { return "reverse proxy" }
func (reverseProxy) handles() bool { return true }
func (reverseProxy) serve(f *fixture, p *pipeline.Pipeline, app http.Handler) http.Handler {
	t := f.t
	up := httptest.NewServer(app)
	t.Cleanup(up.Close)
	target, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	px, err := proxy.New(proxy.Settings{Upstream: target, Pipeline: p, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return px
}

// app is the application behind the pipeline. It answers status, and sets
// X-RateLimit-Limit: 999 and X-App: yes, the first to be replaced by the
// pipeline's own on a limited request.
type app struct {
	status atomic.Int64
	calls  atomic.Int64
	// slow: wait for the request's context to end, then answer 504 when the
	// cause is a timeout (the breaker's deadline), as a proxy does.
	slow atomic.Bool
}

func newApp() *app {
	a := &app{}
	a.status.Store(http.StatusOK)
	return a
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	w.Header().Set(enforce.HeaderLimit, "999")
	w.Header().Set("X-App", "yes")
	if r.Header.Get("Upgrade") != "" {
		upgrade(w, r)
		return
	}
	if a.slow.Load() {
		<-r.Context().Done()
		w.WriteHeader(http.StatusGatewayTimeout)
		return
	}
	w.WriteHeader(int(a.status.Load()))
	_, _ = w.Write([]byte("app"))
}

// upgrade switches to a protocol that says, 3 breaker deadlines later,
// whether the request's context is still alive: a 101 with the header map
// as it is (ours in place of the app's on a limited request).
func upgrade(w http.ResponseWriter, r *http.Request) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	w.Header().Set("Connection", "Upgrade")
	w.Header().Set("Upgrade", "probe")
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = w.Header().Write(brw)
	_, _ = brw.WriteString("\r\n")
	_ = brw.Flush()
	time.Sleep(3 * upgradeDeadline)
	msg := "alive"
	if r.Context().Err() != nil {
		msg = "ended"
	}
	_, _ = brw.WriteString(msg)
	_ = brw.Flush()
}

// upgradeDeadline is the breaker's deadline in TestUpgrade: long enough to
// answer within, under -race.
const upgradeDeadline = 100 * time.Millisecond

// counter is a fake Settings.Metrics and Settings.Refusals.
type counter struct {
	mu       sync.Mutex
	counted  map[[3]string]int // tier, rule, reason
	refused  map[[3]string]int
	observed int         // Settings.Answers
	statuses map[int]int // the answers' statuses, as Settings.Answers saw them
	badTimes int         // answers whose admitted time is shorter than the handler's
}

func newCounter() *counter {
	return &counter{counted: map[[3]string]int{}, refused: map[[3]string]int{}, statuses: map[int]int{}}
}

func (c *counter) Count(tier, rule, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counted[[3]string{tier, rule, reason}]++
}

func (c *counter) Refused(tier, rule, reason, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused[[3]string{tier, rule, reason}]++
}

func (c *counter) Answered(status int, admitted, handler time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observed++
	c.statuses[status]++
	if handler < 0 || admitted < handler {
		c.badTimes++
	}
}

// control is what the controller and the admin API tell the enforcer:
// tier assignments, and each tier's multiplier (1 unless set) and
// admission cap (none unless set).
type control struct {
	tiers        map[string]string
	mults, rates map[string]float64
}

func (c *control) TierOf(key string) (string, bool) { t, ok := c.tiers[key]; return t, ok }
func (c *control) Rate(tier string) float64         { return c.rates[tier] }
func (c *control) Multiplier(tier string) float64 {
	m, set := c.mults[tier]
	if !set {
		m = 1
	}
	return m
}

// quota is the free tier's: 3 a minute, all at once.
const quota = 3

// fixture is the parts one situation runs with, made anew for each front:
// a situation's setup changes them before the pipeline is made.
type fixture struct {
	t       *testing.T
	store   limiter.Store
	control control
	policy  enforce.Policy
	es      enforce.Settings
	s       pipeline.Settings
	app     *app
	counter *counter
	front   front        // the front, once made
	handler http.Handler // its handler
	undo    []func()     // releases what the setup holds
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, store: limiter.NewMemory(), app: newApp(), counter: newCounter()}
	f.policy = enforce.Policy{
		Tiers: []enforce.Tier{
			{Name: "free", Limit: quota, Period: time.Minute, Burst: quota, Priority: 1},
			{Name: "premium", Limit: 100, Period: time.Minute, Burst: 100, Priority: 0},
		},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/api", Keys: []string{"header:X-API-Key"}}},
	}
	f.control.tiers = map[string]string{"k1": "free", "k2": "premium"}
	f.es = enforce.Settings{Tiers: &f.control, Multipliers: &f.control, Rates: &f.control} // X-API-Key: the default identity
	f.s = pipeline.Settings{Metrics: f.counter, Refusals: f.counter, Answers: f.counter}
	return f
}

// redis puts the fixture's buckets on a real Redis.
func (f *fixture) redis() {
	r := testenv.StartRedis(f.t)
	f.store = redisstore.New(r.Client(), limiter.WithPrefix("pipeline:"))
}

// redisDown puts the fixture's buckets on a Redis that is down, behind
// the fallback (local policy: this instance's share of each quota).
func (f *fixture) redisDown() {
	st, err := fallback.New(redisstore.New(testenv.DeadRedis(f.t)), fallback.Settings{}, prometheus.NewRegistry())
	if err != nil {
		f.t.Fatal(err)
	}
	f.store = st
}

// build makes the enforcer and the pipeline, and serves f.app behind them
// through fr.
func (f *fixture) build(fr front) { f.serve(fr, f.app) }

// serve makes the enforcer and the pipeline, and serves app behind them
// through fr.
func (f *fixture) serve(fr front, app http.Handler) {
	f.t.Helper()
	e, err := enforce.New(f.store, f.policy, f.es)
	if err != nil {
		f.t.Fatal(err)
	}
	f.s.Enforcer = e
	p, err := pipeline.New(f.s)
	if err != nil {
		f.t.Fatal(err)
	}
	f.front, f.handler = fr, fr.serve(f, p, app)
}

// request is a GET of path by key k1 (tier free).
func request(path string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("X-API-Key", "k1")
	return r
}

// send serves r and returns the answer.
func (f *fixture) send(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, r)
	return rec
}

// get sends n GETs of path and returns the last answer.
func (f *fixture) get(path string, n int) *httptest.ResponseRecorder {
	var rec *httptest.ResponseRecorder
	for range n {
		rec = f.send(request(path))
	}
	return rec
}

// refusal is the JSON body of a refused answer; zero when it is none.
func refusal(rec *httptest.ResponseRecorder) enforce.Refusal {
	var r enforce.Refusal
	_ = json.Unmarshal(rec.Body.Bytes(), &r)
	return r
}

// eventually waits, bounded, for cond; it synchronises with the request
// in flight and asserts nothing about speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
