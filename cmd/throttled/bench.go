package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// benchResult is what `throttled bench --json` prints.
type benchResult struct {
	Store           string  `json:"store"`
	Algorithm       string  `json:"algorithm"`
	Concurrency     int     `json:"concurrency"`
	Keys            int     `json:"keys"`
	DurationSeconds float64 `json:"duration_seconds"`
	Decisions       int64   `json:"decisions"`
	Errors          int64   `json:"errors"`
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	P50Micros       float64 `json:"p50_us"`
	P99Micros       float64 `json:"p99_us"`
}

// bench dispatches `throttled bench decisions|overload`; without a
// subcommand (or with flags first) it is `bench decisions`, the old name.
func bench(args []string, w io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "overload":
			return benchOverload(args[1:], w)
		case "decisions":
			return benchDecisions(args[1:], w)
		}
	}
	return benchDecisions(args, w)
}

// benchDecisions measures decisions per second and latency against a store
// from many goroutines.
func benchDecisions(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench decisions", flag.ContinueOnError)
	fs.SetOutput(w)
	store := fs.String("store", "memory", "memory or redis")
	redisURL := fs.String("redis-url", "redis://127.0.0.1:6379/0", "Redis URL (with --store redis)")
	algName := fs.String("algorithm", "token_bucket", "algorithm to measure")
	conc := fs.Int("concurrency", 64, "concurrent callers")
	keys := fs.Int("keys", 1024, "distinct keys")
	dur := fs.Duration("duration", 5*time.Second, "how long to measure")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	alg, err := limiter.ParseAlgorithm(*algName)
	if err != nil {
		return err
	}
	if *conc < 1 || *conc > 10000 || *keys < 1 || *keys > 10_000_000 || *dur <= 0 || *dur > time.Hour {
		return errors.New("bench: want 1 ≤ --concurrency ≤ 10000, 1 ≤ --keys ≤ 1e7, 0 < --duration ≤ 1h")
	}
	var s limiter.Store
	switch *store {
	case "memory":
		s = limiter.NewMemory()
	case "redis":
		opt, err := redis.ParseURL(*redisURL)
		if err != nil {
			return fmt.Errorf("bench: --redis-url: %w", err)
		}
		opt.PoolSize = *conc
		c := redis.NewClient(opt)
		defer c.Close()
		s = redisstore.New(c, limiter.WithPrefix("throttled-bench:"))
	default:
		return fmt.Errorf("bench: --store %q: want memory or redis", *store)
	}
	res := runBench(s, alg, *conc, *keys, *dur)
	res.Store = *store
	if *asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err = fmt.Fprintf(w, "%s %s: %d callers, %d keys, %.1fs: %.0f decisions/s, p50 %.0fµs, p99 %.0fµs, %d errors\n",
		res.Store, res.Algorithm, res.Concurrency, res.Keys, res.DurationSeconds, res.DecisionsPerSec, res.P50Micros, res.P99Micros, res.Errors)
	return err
}

func runBench(s limiter.Store, alg limiter.Algorithm, conc, nkeys int, dur time.Duration) benchResult {
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	rule := limiter.Rule{Name: "bench", Algorithm: alg, Limit: 1_000_000, Period: time.Second, Burst: 1_000_000}
	if alg == limiter.SlidingWindowLog {
		rule.Limit, rule.Period = 100, 10*time.Millisecond // bounded logs
	}
	var n, errs atomic.Int64
	lat := make([][]time.Duration, conc)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; ctx.Err() == nil; i += conc {
				t0 := time.Now()
				if _, err := s.Decide(ctx, limiter.Request{Key: keys[i%nkeys], Rule: rule}); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				if i/conc%16 == 0 { // sample 1 in 16 latencies
					lat[g] = append(lat[g], time.Since(t0))
				}
				n.Add(1)
			}
		}(g)
	}
	wg.Wait()
	el := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))]) / float64(time.Microsecond)
	}
	return benchResult{Algorithm: alg.String(), Concurrency: conc, Keys: nkeys, DurationSeconds: el.Seconds(),
		Decisions: n.Load(), Errors: errs.Load(), DecisionsPerSec: float64(n.Load()) / el.Seconds(),
		P50Micros: q(0.5), P99Micros: q(0.99)}
}
