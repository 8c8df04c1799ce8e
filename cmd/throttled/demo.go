package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/throttledhq/throttled/internal/bench"
	"github.com/throttledhq/throttled/internal/overload"
)

// demoFlags are the flags of `throttled demo`.
type demoFlags struct {
	duration      time.Duration
	redisURL      string
	prometheusURL string
	adminListen   string
	plain         bool
	backend       overload.BackendSettings // zero: the default backend (tests scale it down)
}

// demo runs the `surge` overload scenario live: a backend of limited
// capacity, premium and free clients (and one greedy free key above its
// quota), a free surge to 2.5× capacity in the middle third, and the real
// throttled (both loops, bench.StartStack) in between, on embedded defaults unless
// --redis-url / --prometheus-url name real parts. It is `throttled bench
// overload --scenario surge --mode controller` with a live table.
func demo(args []string, w io.Writer) error {
	fs := newFlagSet("demo", "", "simulated overload on embedded defaults: backend, free and premium clients, proxy\nand controller, with a live table")
	fs.SetOutput(w)
	var f demoFlags
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "how long to run (thirds: before, surge, after)")
	fs.StringVar(&f.redisURL, "redis-url", "", "use this Redis instead of the in-memory store")
	fs.StringVar(&f.prometheusURL, "prometheus-url", "", "read signals from this Prometheus; it must scrape the demo's /metrics at --admin-listen")
	fs.StringVar(&f.adminListen, "admin-listen", "", "admin API and /metrics address (default: a free loopback port)")
	fs.BoolVar(&f.plain, "plain", false, "print rows instead of redrawing the table")
	if err := parseFlags(fs, args, w, 0); err != nil {
		return err
	}
	if f.duration < 3*time.Second || f.duration > 24*time.Hour {
		return fmt.Errorf("demo: --duration %v must be in 3s..24h", f.duration)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop() // Ctrl-C ends the run early, with the summary
	_, err := runDemo(ctx, f, w)
	return err
}

// demoTarget is the latency target of the demo's 2xx answers.
const demoTarget = 250 * time.Millisecond

// runDemo runs the demo until its duration passes or ctx ends, and returns
// the Report.
func runDemo(ctx context.Context, f demoFlags, w io.Writer) (overload.Report, error) {
	bs := f.backend
	sc, err := overload.Lookup("surge", bs.Capacity())
	if err != nil {
		return overload.Report{}, err
	}
	view := bench.NewView(w, f.plain)
	parts := bench.Parts{RedisURL: f.redisURL, PrometheusURL: f.prometheusURL, AdminListen: f.adminListen}
	intro := fmt.Sprintf("throttled demo, %v: a backend of capacity %.0f req/s (latency target %v);\n"+
		"premium clients %.0f req/s, free clients %.0f req/s and %.0f in the surge (the\n"+
		"middle third), one greedy free key %d req/s above its quota. Ctrl-C stops it.\n",
		f.duration, bs.Capacity(), demoTarget, sc.Capacity*0.5, sc.Capacity*0.25, sc.Capacity*2.5, overload.GreedyExcess)
	rep, err := overload.Run(ctx, sc, overload.RunSettings{Duration: f.duration, Target: demoTarget,
		Mode: overload.Controller, Backend: bs, OnRow: view.Row,
		Stack: func(ctx context.Context, spec overload.StackSpec) (overload.Stack, error) {
			st, err := bench.StartStack(ctx, spec, parts)
			if err != nil {
				return nil, err
			}
			view.Start(intro, st.URLs()[0], st.Admins()[0], bench.AdminToken)
			return st, nil
		}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, overload.ErrUnreconciled) {
		return rep, err
	}
	view.Summary(rep)
	if errors.Is(err, overload.ErrUnreconciled) {
		return rep, err
	}
	return rep, nil
}
