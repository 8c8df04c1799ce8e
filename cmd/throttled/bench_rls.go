package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/throttledhq/throttled/internal/bench"
)

// benchRLS loads a rate limit service (Envoy's RLS v3: throttled's or
// another) over gRPC and prints bench.RLSResult, or with --exactness N
// fires N calls at one fresh key across a second boundary
// (bench.ExactResult).
func benchRLS(args []string, w io.Writer) error {
	fs := newFlagSet("bench rls", "", "a gRPC load generator for any Envoy rate limit service (RLS v3)")
	addr := fs.String("addr", "127.0.0.1:8081", "the service's HOST:PORT (a comma-separated list: callers spread over them)")
	domain := fs.String("domain", "throttled", "the rate limit domain")
	descriptor := fs.String("descriptor", "rule=per_key,key={id}", "the descriptor's entries; {id} is a key id 0..keys-1, round robin")
	conc := fs.Int("concurrency", 16, "concurrent callers")
	keys := fs.Int("keys", 10000, "distinct key ids")
	dur := fs.Duration("duration", 10*time.Second, "how long to measure")
	warmup := fs.Duration("warmup", time.Second, "load before measuring, not counted")
	pids := fs.String("pids", "", "the services' process ids, comma-separated: their CPU per 10k decisions")
	redisURL := fs.String("redis-url", "", "the services' Redis: its CPU per decision (INFO cpu)")
	exact := fs.Int("exactness", 0, "instead: fire N calls at one fresh key within --span across a second boundary")
	span := fs.Duration("span", 200*time.Millisecond, "with --exactness: the span of the calls")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args, w, 0); err != nil {
		return err
	}
	desc, err := bench.ParseDescriptor(*descriptor)
	if err != nil {
		return err
	}
	ids, err := bench.ParsePIDs(*pids)
	if err != nil {
		return err
	}
	if *conc < 1 || *conc > 10000 || *keys < 1 || *dur <= 0 || *dur > time.Hour || *warmup < 0 || *exact < 0 || *span <= 0 {
		return errors.New("bench rls: want 1 ≤ --concurrency ≤ 10000, --keys ≥ 1, 0 < --duration ≤ 1h, --warmup ≥ 0, --exactness ≥ 0, --span > 0")
	}
	spec := bench.RLSSpec{Addrs: strings.Split(*addr, ","), Domain: *domain, Descriptor: desc,
		Concurrency: *conc, Keys: *keys, Duration: *dur, Warmup: *warmup, PIDs: ids}
	if *redisURL != "" {
		if spec.Redis, err = bench.NewRedis(*redisURL, 1); err != nil {
			return err
		}
		defer spec.Redis.Close()
	}
	var res any
	if *exact > 0 {
		res, err = bench.RLSExact(spec, *exact, *span)
	} else {
		res, err = bench.RLS(spec)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	return bench.PrintRLS(w, res)
}
