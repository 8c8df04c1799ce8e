package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// serveRLS is the real throttled (throttled.New) on Redis at redisURL with
// its rate limit service on a loopback port and a rule per_key of rate per
// second (burst the same), keyed by the descriptor; it returns the
// service's address.
func serveRLS(t *testing.T, redisURL string, rate int) string {
	t.Helper()
	src := fmt.Sprintf(`redis: { url: %q }
rls: { listen: 127.0.0.1:0, domain: bench }
tiers:
  free: { rate: %d, period: 1s, burst: %d, priority: 1 }
rules:
  - name: per_key
    match: { path: / }
    key: header:X-Key
controller: { disabled: true }
`, redisURL, rate, rate)
	cfg, err := config.Parse([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := throttled.New(context.Background(), cfg, throttled.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- inst.RLS().Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := inst.RLS().Shutdown(ctx); err != nil {
			t.Errorf("rls: Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("rls: Serve: %v", err)
		}
		if err := inst.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestRLSLoadCountsEveryCall: bench rls against throttled's own rate limit
// service on Redis, with a rule tight enough (5/s over 4 keys) that most
// calls are refused: every call is counted once (ok + over_limit + errors
// = decisions), some are refused, none fail, and the CPU of the service
// (this process) and of Redis are measured.
func TestRLSLoadCountsEveryCall(t *testing.T) {
	r := testenv.StartRedis(t)
	addr := serveRLS(t, r.URL(), 5)
	desc, err := ParseDescriptor("rule=per_key,key={id}")
	if err != nil {
		t.Fatal(err)
	}
	res, err := RLS(RLSSpec{Addrs: []string{addr, addr}, Domain: "bench", Descriptor: desc, Concurrency: 4, Keys: 4,
		Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond, PIDs: []int{os.Getpid()}, Redis: r.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decisions == 0 || res.OK+res.OverLimit+res.Errors != res.Decisions {
		t.Fatalf("ok %d + over_limit %d + errors %d, want decisions %d (> 0)", res.OK, res.OverLimit, res.Errors, res.Decisions)
	}
	if res.OverLimit == 0 || res.OK == 0 || res.Errors != 0 {
		t.Fatalf("ok %d, over_limit %d, errors %d (%s): want both answers, no error", res.OK, res.OverLimit, res.Errors, res.FirstError)
	}
	if res.DecisionsPerSec <= 0 || res.P99Micros < res.P50Micros || res.P50Micros <= 0 ||
		res.ServiceCPUPer10k <= 0 || res.RedisCPUPerDecision <= 0 {
		t.Fatalf("figures: %+v", res)
	}
	if res.ScriptCallsPerDecision <= 0 || res.ScriptCallsPerDecision > 1 { // a call decides one or more
		t.Fatalf("script calls per decision %v, want in (0, 1]", res.ScriptCallsPerDecision)
	}
}

// TestRLSJSONNames: the JSON of bench rls has exactly the names of the
// issue's contract (and a few more: decisions, fallback_ok, concurrency,
// keys, duration_seconds).
func TestRLSJSONNames(t *testing.T) {
	b, err := json.Marshal(RLSResult{FirstError: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"decisions_per_sec", "p50_us", "p99_us", "errors", "ok", "over_limit",
		"service_cpu_s_per_10k", "redis_cpu_us_per_decision", "decisions", "fallback_ok",
		"script_calls_per_decision"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
}

// TestRLSExactnessStaysWithinRefill: 3× the limit (10/s) fired at one
// fresh key across two connections within 200 ms straddling a second
// boundary: throttled's token bucket admits at most limit + refill over
// the span (10 + 10×span, plus one for a token refilled mid-call) and at
// least the limit, besides what an instance let through alone on its
// fallback (a store slow on a loaded host), which the result counts.
func TestRLSExactnessStaysWithinRefill(t *testing.T) {
	r := testenv.StartRedis(t)
	addr := serveRLS(t, r.URL(), 10)
	desc, _ := ParseDescriptor("rule=per_key,key={id}")
	res, err := RLSExact(RLSSpec{Addrs: []string{addr, addr}, Domain: "bench", Descriptor: desc}, 30, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	most := 10 + int64(10*res.SpanMs/1000) + 1
	if shared := res.OK - res.FallbackOK; res.Errors != 0 || shared < 10 || shared > most || res.OK+res.OverLimit != 30 {
		t.Fatalf("%+v: want 10 ≤ ok - fallback_ok ≤ %d of 30, no error", res, most)
	}
}

// TestParseDescriptor: entries in order; a malformed one is ErrDescriptor.
func TestParseDescriptor(t *testing.T) {
	d, err := ParseDescriptor("rule=per_key,key={id}")
	if err != nil || len(d) != 2 || d[1] != (DescriptorEntry{"key", "{id}"}) {
		t.Fatalf("%v, %v", d, err)
	}
	for _, bad := range []string{"", "rule", "rule=per_key,=x", "rule="} {
		if _, err := ParseDescriptor(bad); !errors.Is(err, ErrDescriptor) {
			t.Errorf("%q: %v, want ErrDescriptor", bad, err)
		}
	}
}
