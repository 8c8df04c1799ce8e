package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/internal/testenv"
)

// smallBackend is the demo's backend scaled down to 50 req/s, so that the
// tests measure control and not the CPU of a machine that runs other tests
// under -race beside them.
var smallBackend = overload.BackendSettings{Workers: 2, ServiceTime: 40 * time.Millisecond}

// surgeBackend is smaller still (25 req/s) for the premium ≥ 99 % check, so
// that it holds beside the rest of the suite on two cores.
var surgeBackend = overload.BackendSettings{Workers: 1, ServiceTime: 40 * time.Millisecond}

// looseTarget is the latency target of the tests' runs: generous, so that
// a CPU starved by other tests under -race is not read as an overload of
// the backend. The control is the same; the figures are the benchmark's.
const looseTarget = time.Second

// TestDemo runs the demo briefly on embedded defaults: a table per second,
// free shed (503) during the surge, the greedy key's 429s, and the summary
// that ends with the bench's headline.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), demoFlags{duration: 9 * time.Second, plain: true, backend: smallBackend}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Phases.During.Status.Shed == 0 {
		t.Fatalf("nothing shed during the surge\n%s", out.String())
	}
	// The greedy key, above its quota, gets 429s whichever loop sheds.
	if g := rep.Totals["greedy"]; g.Class[overload.OverQuota] == 0 {
		t.Fatalf("the greedy key never got a 429\n%s", out.String())
	}
	for _, want := range []string{"t=  4s overload", "503 backend", "summary after 9 s", "surge/controller: premium admitted"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSurgeKeepsPremiumWhole is the short surge run of the test suite, on
// the small backend: premium keeps ≥ 99 %
// of its requests through the surge, and the p99 of 2xx settles within the
// target. The figures of record are the benchmark's (BENCHMARKS.md).
func TestSurgeKeepsPremiumWhole(t *testing.T) {
	bs := surgeBackend
	sc, err := overload.Lookup("surge", bs.Capacity())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := overload.Run(context.Background(), sc, overload.RunSettings{Duration: 12 * time.Second,
		Target: looseTarget, Mode: overload.Controller, Backend: bs, Timeout: 30 * time.Second,
		Stack: func(ctx context.Context, spec overload.StackSpec) (overload.Stack, error) {
			return startOverloadStack(ctx, spec, overloadParts{})
		}})
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Phases.During
	if o.PremiumAdmittedPct < 99 {
		t.Errorf("premium admitted %.1f%% during the surge, want ≥ 99%%: %s", o.PremiumAdmittedPct, headline(rep))
	}
	if rep.SettleS < 0 {
		t.Errorf("the p99 of 2xx never settled within the target: %s", headline(rep))
	}
	if o.Status.Shed == 0 || o.FreeAdmittedPct > 90 {
		t.Errorf("free was not shed (free admitted %.1f%%, %d shed): %s", o.FreeAdmittedPct, o.Status.Shed, headline(rep))
	}
}

// TestDemoOnRealParts runs the demo on a real Redis and a real Prometheus
// that scrapes the demo's /metrics: the outer loop reads its signals through
// PromQL, and the free tier is shed while premium keeps its requests.
func TestDemoOnRealParts(t *testing.T) {
	r := testenv.StartRedis(t)
	admin := testenv.Addr(testenv.FreePort(t))
	prom := testenv.StartPrometheus(t, admin)
	var out bytes.Buffer
	f := demoFlags{duration: 15 * time.Second, plain: true, adminListen: admin, redisURL: r.URL(), prometheusURL: prom.URL(),
		backend: smallBackend, target: looseTarget}
	rep, err := runDemo(context.Background(), f, &out)
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Phases.During; o.Status.Shed == 0 || o.PremiumAdmittedPct < 95 {
		t.Fatalf("on real parts: %s\n%s", headline(rep), out.String())
	}
}
