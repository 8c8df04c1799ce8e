package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestDemo runs the demo briefly on embedded defaults: the backend is
// driven into overload, the controller cuts the free tier (lowest priority)
// first, and free clients get 503s while premium keeps most of its goodput.
// The bounds are loose on purpose: this runs beside other tests on two
// cores under -race.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	f := demoFlags{duration: 15 * time.Second, refresh: time.Second, plain: true, adminListen: "127.0.0.1:0"}
	ctx, cancel := context.WithTimeout(context.Background(), f.duration)
	defer cancel()
	v, err := runDemo(ctx, f, &out)
	if err != nil {
		t.Fatal(err)
	}
	free, premium := v.gen.total["free"], v.gen.total["premium"]
	if v.minMult["free"] >= 1 || free.shed.Load() == 0 {
		t.Fatalf("free was never cut: lowest multiplier %v, %d shed\n%s", v.minMult["free"], free.shed.Load(), out.String())
	}
	if v.minMult["free"] > v.minMult["premium"] {
		t.Fatalf("premium (%v) was cut below free (%v): priority order broken", v.minMult["premium"], v.minMult["free"])
	}
	if ok, sent := premium.ok.Load(), premium.sent.Load(); ok*2 < sent {
		t.Fatalf("premium got %d of %d through", ok, sent)
	}
	if g := v.gen.total["greedy"]; g.over.Load() == 0 {
		t.Fatalf("the greedy key never got a 429")
	}
	if !strings.Contains(out.String(), "summary after") || !strings.Contains(out.String(), "multiplier") {
		t.Fatalf("output lacks the table or the summary:\n%s", out.String())
	}
}

// TestDemoOnRealParts runs the demo on a real Redis and a real Prometheus
// that scrapes the demo's /metrics: the controller reads its signals through
// PromQL and still cuts the free tier.
func TestDemoOnRealParts(t *testing.T) {
	r := testenv.StartRedis(t)
	admin := testenv.Addr(testenv.FreePort(t))
	prom := testenv.StartPrometheus(t, admin)
	var out bytes.Buffer
	f := demoFlags{duration: 24 * time.Second, refresh: time.Second, plain: true, adminListen: admin,
		redisURL: r.URL(), prometheusURL: prom.URL()}
	ctx, cancel := context.WithTimeout(context.Background(), f.duration)
	defer cancel()
	v, err := runDemo(ctx, f, &out)
	if err != nil {
		t.Fatal(err)
	}
	if v.minMult["free"] >= 1 || v.gen.total["free"].shed.Load() == 0 {
		t.Fatalf("free was never cut on real parts: lowest multiplier %v\n%s", v.minMult["free"], out.String())
	}
}
