package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/throttledhq/throttled/internal/bench"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// benchCmd dispatches `throttled bench decisions|overload|http|rls`; without a
// subcommand (or with flags first) it is `bench decisions`, the old name.
func benchCmd(args []string, w io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "overload":
			return benchOverload(args[1:], w)
		case "decisions":
			return benchDecisions(args[1:], w)
		case "http":
			return benchHTTP(args[1:], w)
		case "rls":
			return benchRLS(args[1:], w)
		}
	}
	return benchDecisions(args, w)
}

// benchDecisions measures decisions per second and latency against a store
// from many goroutines (bench.Decisions).
func benchDecisions(args []string, w io.Writer) error {
	fs := newFlagSet("bench decisions", "", "decisions per second and latency of a store")
	fs.SetOutput(w)
	store := fs.String("store", "memory", "memory or redis")
	redisURL := fs.String("redis-url", "redis://127.0.0.1:6379/0", "Redis URL (with --store redis)")
	algName := fs.String("algorithm", "token_bucket", "algorithm to measure")
	conc := fs.Int("concurrency", 64, "concurrent callers")
	keys := fs.Int("keys", 1024, "distinct keys")
	dur := fs.Duration("duration", 5*time.Second, "how long to measure")
	asJSON := fs.Bool("json", false, "print one JSON object")
	maxBatch := fs.Int("max-batch", 0, "redis: decisions per pipeline (0: default, 1: no batching)")
	pipes := fs.Int("pipelines", 0, "redis: pipelines in flight (0: default)")
	gather := fs.Int("gather", 0, "redis: yields of a flusher before it takes a batch (0: default, negative: none)")
	memKeys := fs.Int("memory-keys", 100_000, "redis: fresh keys for the bytes-per-key figure (0: skip)")
	if err := parseFlags(fs, args, w, 0); err != nil {
		return err
	}
	alg, err := limiter.ParseAlgorithm(*algName)
	if err != nil {
		return err
	}
	if *conc < 1 || *conc > 10000 || *keys < 1 || *keys > 10_000_000 || *dur <= 0 || *dur > time.Hour ||
		*memKeys < 0 || *memKeys > 10_000_000 {
		return errors.New("bench: want 1 ≤ --concurrency ≤ 10000, 1 ≤ --keys ≤ 1e7, 0 < --duration ≤ 1h, 0 ≤ --memory-keys ≤ 1e7")
	}
	s, rdb, err := bench.OpenStore(*store, *redisURL, *conc,
		redisstore.Settings{MaxBatch: *maxBatch, Pipelines: *pipes, Gather: *gather})
	if err != nil {
		return err
	}
	if rdb != nil {
		defer rdb.Close()
	}
	res := bench.Decisions(s, alg, *conc, *keys, *dur)
	res.Store = *store
	if rdb != nil && *memKeys > 0 {
		if res.RedisBytesPerKey, err = bench.RedisBytesPerKey(rdb, s, alg, *memKeys, *conc); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	return printDecisions(w, res)
}

// printDecisions prints a result in one line.
func printDecisions(w io.Writer, res bench.DecisionsResult) error {
	_, err := fmt.Fprintf(w, "%s %s: %d callers, %d keys, %.1fs: %.0f decisions/s, p50 %.0fµs, p99 %.0fµs, p99.9 %.0fµs, %d errors, %.2f CPU s",
		res.Store, res.Algorithm, res.Concurrency, res.Keys, res.DurationSeconds, res.DecisionsPerSec,
		res.P50Micros, res.P99Micros, res.P999Micros, res.Errors, res.CPUSeconds)
	if err == nil && res.RedisBytesPerKey > 0 {
		_, err = fmt.Fprintf(w, ", %.0f B of Redis memory per key", res.RedisBytesPerKey)
	}
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}
