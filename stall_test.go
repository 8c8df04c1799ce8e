//go:build !race

// The race detector slows every goroutine handoff several times: with
// callers' deadlines of 10 to 50 ms on a busy 2-core host that measures
// the detector, not the service. make test runs this file alone, after the
// race run, without it.

package throttled

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/rls"
)

// stallConfig serves every front on the Redis at url: one per-key rule
// (fallback local, one instance), the store's breaker opening after
// fallback.consecutive_failures (5) stalled calls and probing every 200 ms,
// and fallback.deadline as given.
func stallConfig(upstream, url string, deadline time.Duration) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
upstream: %s
admin:
  listen: 127.0.0.1:0
redis:
  url: %q
rls:
  listen: 127.0.0.1:0
check:
  enabled: true
tiers:
  free: { rate: 100000, period: 1m, burst: 100000, priority: 1 }
default_tier: free
rules:
  - name: per-key
    match: { path: / }
    key: header:X-API-Key
fallback:
  instances: 1
  deadline: %s
  open_timeout: 200ms
`, upstream, url, deadline)
}

// stallCall is one decision asked of a front by a caller that waits d:
// fallback reports whether the fallback decided it; an error means no
// decision came within d.
type stallCall func(t *testing.T, d time.Duration) (fallback bool, err error)

// stallFront builds one front of s: its call, and the store deadline its
// callers need. A gRPC caller's deadline reaches the decision, and so does
// the one an embedding service sets on its requests (http.TimeoutHandler);
// a client of /v1/check or of the proxy does not tell its own, so its
// decision is bounded by fallback.deadline, once per request (a rule and
// its tier's admission), and the case sets it to a quarter of the client's.
type stallFront struct {
	name  string
	store func(d time.Duration) time.Duration // fallback.deadline for callers of d
	call  func(t *testing.T, s *Instance) stallCall
}

var stallKey atomic.Int64

// nextKey is a key of its own per call, so that no bucket runs dry.
func nextKey() string { return "k" + strconv.FormatInt(stallKey.Add(1), 10) }

var stallFronts = []stallFront{
	{"rls", func(time.Duration) time.Duration { return 50 * time.Millisecond }, rlsStallCall},
	{"check", func(d time.Duration) time.Duration { return d / 4 }, checkStallCall},
	{"middleware", func(time.Duration) time.Duration { return 50 * time.Millisecond }, middlewareStallCall},
	{"proxy", func(d time.Duration) time.Duration { return d / 4 }, proxyStallCall},
}

// rlsStallCall asks the rate limit service as gRPC serves it, under a
// context with the caller's deadline (what grpc-timeout gives the server),
// in process: the test's own gRPC transport on a busy host is not the
// service's time. An answer after the deadline is an error, as the caller
// would have given up.
func rlsStallCall(t *testing.T, s *Instance) stallCall {
	srv := s.RLS()
	return func(t *testing.T, d time.Duration) (bool, error) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		resp, err := srv.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: rls.DefaultDomain,
			Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{
				{Key: "rule", Value: "per-key"}, {Key: "api_key", Value: nextKey()}}}}})
		if took := time.Since(start); err == nil && took > d {
			err = fmt.Errorf("rls: answered after %v", took.Round(time.Microsecond))
		}
		if err != nil {
			return false, err
		}
		if resp.OverallCode != rlsv3.RateLimitResponse_OK {
			return false, fmt.Errorf("rls: %v, want OK", resp.OverallCode)
		}
		return resp.DynamicMetadata.GetFields()["fallback"].GetBoolValue(), nil
	}
}

func checkStallCall(t *testing.T, s *Instance) stallCall {
	srv := httptest.NewServer(s.AdminHandler())
	t.Cleanup(srv.Close)
	return func(t *testing.T, d time.Duration) (bool, error) {
		body := `{"rule":"per-key","key":"` + nextKey() + `"}`
		resp, err := (&http.Client{Timeout: d}).Post(srv.URL+"/v1/check", "application/json", strings.NewReader(body))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var a struct {
			Status   int  `json:"status"`
			Fallback bool `json:"fallback"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return false, err
		}
		if resp.StatusCode != http.StatusOK || a.Status != http.StatusOK {
			return false, fmt.Errorf("check: %d %+v, want 200", resp.StatusCode, a)
		}
		return a.Fallback, nil
	}
}

// middlewareStallCall serves the middleware as a service embedding it
// would, with its requests' deadline set by http.TimeoutHandler; the
// fallback mark is the decision's count in throttled_decisions_total.
func middlewareStallCall(t *testing.T, s *Instance) stallCall {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	return func(t *testing.T, d time.Duration) (bool, error) {
		srv := httptest.NewServer(http.TimeoutHandler(s.Middleware(ok), d, "handler timed out"))
		defer srv.Close()
		// The deadline is the server's, as an embedding service sets it: a
		// decision that missed it gets TimeoutHandler's 503, not a 200. The
		// client waits longer, so that a busy host's scheduling of the test's
		// own connection is not counted against the service.
		return httpStallCall(t, s, srv.URL, d+time.Second)
	}
}

func proxyStallCall(t *testing.T, s *Instance) stallCall {
	p, err := s.Proxy()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return func(t *testing.T, d time.Duration) (bool, error) { return httpStallCall(t, s, srv.URL, d) }
}

// httpStallCall sends GET / with a client timeout of d.
func httpStallCall(t *testing.T, s *Instance, url string, d time.Duration) (bool, error) {
	before := fallbackDecisions(t, s)
	req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
	req.Header.Set("X-API-Key", nextKey())
	resp, err := (&http.Client{Timeout: d}).Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%d %q, want 200", resp.StatusCode, b)
	}
	return fallbackDecisions(t, s) > before, nil
}

// fallbackDecisions is the count of per-key decisions made by the fallback.
func fallbackDecisions(t *testing.T, s *Instance) float64 {
	t.Helper()
	mfs, err := s.gather.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "throttled_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var rule, decision string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "rule":
					rule = l.GetValue()
				case "decision":
					decision = l.GetValue()
				}
			}
			if rule == "per-key" && strings.HasPrefix(decision, "fallback_") {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestStalledRedisEveryFront: Redis stopped by SIGSTOP, callers waiting 10,
// 20 and 50 ms on every front (the rate limit service, POST /v1/check, the
// middleware, the proxy): every call is answered within its deadline with
// a decision the fallback made, the store's breaker opens within 1 s, and
// shared decisions are back within 1 s of SIGCONT.
func TestStalledRedisEveryFront(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	for _, fr := range stallFronts {
		for _, d := range stallDeadlines {
			t.Run(fmt.Sprintf("%s/%v", fr.name, d), func(t *testing.T) {
				s := onRedis(t, r, stallConfig(up.URL, r.URL(), fr.store(d)))
				stallRun(t, s, r, fr.call(t, s), d)
			})
		}
	}
}

// stallDeadlines are the callers' deadlines, as Envoy users set them.
var stallDeadlines = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}

func stallRun(t *testing.T, s *Instance, r *testenv.Redis, call stallCall, d time.Duration) {
	ask := func(phase string, wantFallback bool) bool {
		t.Helper()
		fb, err := call(t, d)
		if err != nil {
			t.Fatalf("%s: no decision within the caller's %v: %v", phase, d, err)
		}
		if wantFallback && !fb {
			t.Fatalf("%s: a shared decision while Redis is stopped", phase)
		}
		return fb
	}
	testenv.WaitFor(t, 5*time.Second, "a shared decision before the stall", func() bool {
		fb, err := call(t, time.Second)
		return err == nil && !fb
	})
	state := func() bulkhead.State {
		return bulkhead.State(gaugeOf(t, s.gather, bulkhead.MetricBreakerState, "redis"))
	}
	r.Pause()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			r.Resume()
		}
	})
	paused, calls := time.Now(), 0
	for state() != bulkhead.StateOpen {
		if time.Since(paused) > time.Second {
			t.Fatalf("the breaker is %v 1s after Redis stopped (%d calls), want open", state(), calls)
		}
		ask("stalled", true)
		calls++
	}
	opened := time.Since(paused)
	for range 5 {
		ask("breaker open", true)
	}
	r.Resume()
	resumed = true
	back := time.Now()
	for ask("resumed", false) {
		if time.Since(back) > time.Second {
			t.Fatal("no shared decision 1s after Redis resumed")
		}
	}
	t.Logf("breaker open %v after the stop (%d calls); shared decisions back in %v",
		opened.Round(time.Millisecond), calls, time.Since(back).Round(time.Millisecond))
}
