package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/throttledhq/throttled/internal/overload"
)

// benchOverload runs `throttled bench overload`: a backend of capacity C,
// open-loop clients of a named scenario, and the real serve stack between
// them, once per mode; one JSON object (one line) per mode.
func benchOverload(args []string, w io.Writer) error {
	fs := newFlagSet("bench overload", "", "an overload scenario against a backend of capacity C, per mode (controller, static, off, all)")
	fs.SetOutput(w)
	scenario := fs.String("scenario", "surge", "surge, crowd, slowdown or instances")
	dur := fs.Duration("duration", 30*time.Second, "length of the run (thirds: before, overload, after)")
	modes := fs.String("mode", "controller", "controller, static, off or all")
	target := fs.Duration("target", 250*time.Millisecond, "latency target of 2xx answers")
	asJSON := fs.Bool("json", false, "print one JSON object per mode (one per line)")
	var parts overloadParts
	fs.StringVar(&parts.redisURL, "redis-url", "", "use this Redis instead of the in-memory store (required for --instances > 1)")
	fs.StringVar(&parts.prometheusURL, "prometheus-url", "", "read signals through this Prometheus (it must scrape the instances' /metrics at --admin-listen)")
	fs.StringVar(&parts.adminListen, "admin-listen", "", "admin and /metrics of instance 0 (HOST:PORT; instance i: PORT+i); default free ports")
	instances := fs.Int("instances", 0, "enforcing instances (0: the scenario's)")
	rows := fs.Bool("rows", false, "also print every second's table (the demo's) on stderr")
	if err := parseFlags(fs, args, w, 0); err != nil {
		return err
	}
	if *dur < 3*time.Second || *dur > 24*time.Hour {
		return fmt.Errorf("bench overload: --duration %v must be in 3s..24h", *dur)
	}
	if *target < time.Millisecond {
		return fmt.Errorf("bench overload: --target %v must be at least 1ms", *target)
	}
	ms, err := overload.ParseModes(*modes)
	if err != nil {
		return err
	}
	bs := overload.BackendSettings{}
	sc, err := overload.Lookup(*scenario, bs.Capacity())
	if err != nil {
		return err
	}
	if *instances < 0 || *instances > 16 {
		return fmt.Errorf("bench overload: --instances %d must be in 0..16", *instances)
	}
	if *instances > 0 {
		sc.Instances = *instances
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, m := range ms {
		rs := overload.RunSettings{Duration: *dur, Target: *target, Mode: m, Backend: bs,
			Stack: func(ctx context.Context, spec overload.StackSpec) (overload.Stack, error) {
				return startOverloadStack(ctx, spec, parts)
			}}
		if *rows {
			rs.OnRow = newDemoView(rowsOut, true, bs.Capacity()).row
		}
		rep, err := overload.Run(ctx, sc, rs)
		if err != nil && !errors.Is(err, overload.ErrUnreconciled) {
			return err
		}
		if werr := writeOverloadReport(w, rep, *asJSON); werr != nil {
			return werr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rowsOut is where --rows prints (stderr; a test's buffer).
var rowsOut io.Writer = os.Stderr

func writeOverloadReport(w io.Writer, rep overload.Report, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	_, err := fmt.Fprintln(w, headline(rep))
	return err
}

// headline is a report's figures in one line, as the demo's summary ends.
func headline(r overload.Report) string {
	o := r.Phases.During
	settle, recovery := fmt.Sprintf("%.0f s", r.SettleS), fmt.Sprintf("%.1f s", r.RecoveryS)
	if r.SettleS < 0 {
		settle = "never"
	}
	if r.RecoveryS < 0 {
		recovery = "not within the run"
	}
	return fmt.Sprintf("%s/%s: premium admitted %.1f%%, free admitted %.1f%%, goodput %.2f·C (lowest 1 s %.2f·C), "+
		"p99 %.0f ms (target %.0f), settle %s, recovery %s, %.1f flips/min, 503 backend %d / shed %d, CPU %.1f s",
		r.Scenario, r.Mode, o.PremiumAdmittedPct, o.FreeAdmittedPct, o.GoodputRatio, r.LowestGoodputRatio,
		o.P99MS, r.TargetMS, settle, recovery, r.FlipsPerMin, o.Status.Backend503, o.Status.Shed, r.CPUSeconds)
}
