package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/throttledhq/throttled/internal/bench"
	"github.com/throttledhq/throttled/internal/overload"
)

// benchOverload runs `throttled bench overload`: a backend of capacity C,
// open-loop clients of a named scenario, and the real throttled between
// them (bench.StartStack) behind the chosen front, once per mode; one JSON
// object (one line) per mode.
func benchOverload(args []string, w io.Writer) error {
	fs := newFlagSet("bench overload", "", "an overload scenario against a backend of capacity C, per mode (controller, static, off, all)")
	fs.SetOutput(w)
	scenario := fs.String("scenario", "surge", "one of "+strings.Join(overload.Names(), ", "))
	dur := fs.Duration("duration", 30*time.Second, "length of the run (thirds: before, overload, after)")
	modes := fs.String("mode", "controller", "controller, static, off or all")
	target := fs.Duration("target", 250*time.Millisecond, "latency target of 2xx answers")
	asJSON := fs.Bool("json", false, "print one JSON object per mode (one per line)")
	front := fs.String("front", "proxy", "where the clients meet throttled: proxy (the sidecar in front of the backend), middleware (the backend's handler behind the net/http middleware) or echo (behind Echo with the Echo middleware)")
	var parts bench.Parts
	fs.StringVar(&parts.RedisURL, "redis-url", "", "use this Redis instead of the in-memory store (required for --instances > 1)")
	fs.StringVar(&parts.PrometheusURL, "prometheus-url", "", "read signals through this Prometheus (it must scrape the instances' /metrics at --admin-listen)")
	fs.BoolVar(&parts.Prometheus, "prometheus", false, "read signals through a prometheus the bench starts (free port, temp dir, scraping every instance each second) and stops after")
	fs.StringVar(&parts.AdminListen, "admin-listen", "", "admin and /metrics of instance 0 (HOST:PORT; instance i: PORT+i); default free ports")
	instances := fs.Int("instances", 0, "enforcing instances (0: the scenario's; fleet: up to 30)")
	backend := fs.String("backend", "shared", "fleet: shared (one backend of capacity C behind every instance) or per-instance (each its own, of capacity C ÷ N)")
	fs.BoolVar(&parts.RedisCluster, "redis-cluster", false, "fleet: run on a 3-master Redis Cluster the bench starts")
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
	fr, err := overload.ParseFront(*front)
	if err != nil {
		return err
	}
	bs := overload.BackendSettings{}
	sc, err := overload.Lookup(*scenario, bs.Capacity())
	if err != nil {
		return err
	}
	if err := fleetFlags(&sc, &parts, *instances, *backend); err != nil {
		return err
	}
	base := overload.RunSettings{Duration: *dur, Target: *target, Front: fr, Backend: bs, Stack: parts.Start}
	return overloadRuns(w, sc, ms, base, *asJSON, *rows)
}

// overloadRuns runs sc once per mode of ms and prints each report; an
// interrupt ends the run in progress, reported, and the rest.
func overloadRuns(w io.Writer, sc overload.Scenario, ms []overload.Mode, base overload.RunSettings, asJSON, rows bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, m := range ms {
		rs := base
		rs.Mode = m
		if rows {
			fmt.Fprint(rowsOut, bench.RowsHeader)
			rs.OnRow = bench.NewView(rowsOut, true).Row
		}
		rep, err := overload.Run(ctx, sc, rs)
		if err != nil && !errors.Is(err, overload.ErrUnreconciled) {
			return err
		}
		if werr := writeOverloadReport(w, rep, asJSON); werr != nil {
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
	_, err := fmt.Fprintln(w, rep.Headline())
	if err == nil && rep.Fleet != nil {
		_, err = fmt.Fprintln(w, rep.Fleet.Line())
	}
	return err
}

// fleetFlags applies --instances, --backend and --redis-cluster to sc and
// parts: the fleet scenario takes up to 30 instances, split by its uneven
// balancer, the others up to 16.
func fleetFlags(sc *overload.Scenario, parts *bench.Parts, instances int, backend string) error {
	fleet := sc.Name == "fleet"
	limit := map[bool]int{false: 16, true: 30}[fleet]
	if instances < 0 || instances > limit {
		return fmt.Errorf("bench overload: --instances %d must be in 0..%d for --scenario %s", instances, limit, sc.Name)
	}
	if instances > 0 {
		sc.Instances = instances
		if fleet {
			sc.Split = overload.FleetSplit(instances)
		}
	}
	switch {
	case backend != "shared" && backend != "per-instance":
		return fmt.Errorf("bench overload: --backend %q: want shared or per-instance", backend)
	case !fleet && (backend != "shared" || parts.RedisCluster):
		return fmt.Errorf("bench overload: --backend and --redis-cluster are for --scenario fleet")
	}
	parts.PerInstance = backend == "per-instance"
	return nil
}
