package main

import (
	"context"
	"encoding/json"
	"errors"
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

// benchResult is what `throttled bench decisions --json` prints.
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
	P999Micros      float64 `json:"p999_us"`
	CPUSeconds      float64 `json:"cpu_seconds"` // user+system CPU of this process during the run
	// RedisBytesPerKey is the growth of Redis INFO memory used_memory per
	// live key after one decision on each of --memory-keys fresh keys
	// (--store redis only; client keys "mem:N", fields of the buckets
	// "throttled-bench:<alg>{<slot tag>}").
	RedisBytesPerKey float64 `json:"redis_bytes_per_key,omitempty"`
}

// bench dispatches `throttled bench decisions|overload|http`; without a
// subcommand (or with flags first) it is `bench decisions`, the old name.
func bench(args []string, w io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "overload":
			return benchOverload(args[1:], w)
		case "decisions":
			return benchDecisions(args[1:], w)
		case "http":
			return benchHTTP(args[1:], w)
		}
	}
	return benchDecisions(args, w)
}

// benchDecisions measures decisions per second and latency against a store
// from many goroutines.
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
	var s limiter.Store
	var rdb *redis.Client
	switch *store {
	case "memory":
		s = limiter.NewMemory()
	case "redis":
		opt, err := redis.ParseURL(*redisURL)
		if err != nil {
			return fmt.Errorf("bench: --redis-url: %w", err)
		}
		opt.PoolSize = *conc
		opt.ContextTimeoutEnabled = true
		rdb = redis.NewClient(opt)
		defer rdb.Close()
		if s, err = redisstore.NewWithSettings(rdb, redisstore.Settings{MaxBatch: *maxBatch, Pipelines: *pipes, Gather: *gather}, limiter.WithPrefix(benchPrefix)); err != nil {
			return fmt.Errorf("bench: --max-batch or --pipelines: %w", err)
		}
	default:
		return fmt.Errorf("bench: --store %q: want memory or redis", *store)
	}
	res := runBench(s, alg, *conc, *keys, *dur)
	res.Store = *store
	if rdb != nil && *memKeys > 0 {
		if res.RedisBytesPerKey, err = redisBytesPerKey(rdb, s, alg, *memKeys, *conc); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err = fmt.Fprintf(w, "%s %s: %d callers, %d keys, %.1fs: %.0f decisions/s, p50 %.0fµs, p99 %.0fµs, p99.9 %.0fµs, %d errors, %.2f CPU s",
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
	var stop atomic.Bool // decisions in flight at the end finish normally
	lat := make([][]time.Duration, conc)
	ctx := context.Background()
	var wg sync.WaitGroup
	cpu0, start := cpuSeconds(), time.Now()
	t := time.AfterFunc(dur, func() { stop.Store(true) })
	defer t.Stop()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; !stop.Load(); i += conc {
				t0 := time.Now()
				if _, err := s.Decide(ctx, limiter.Request{Key: keys[i%nkeys], Rule: rule}); err != nil {
					errs.Add(1)
					continue
				}
				lat[g] = append(lat[g], time.Since(t0))
				n.Add(1)
			}
		}(g)
	}
	wg.Wait()
	el, cpu := time.Since(start), cpuSeconds()-cpu0
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
		P50Micros: q(0.5), P99Micros: q(0.99), P999Micros: q(0.999), CPUSeconds: cpu}
}

// benchPrefix is the prefix of every key the bench writes.
const benchPrefix = "throttled-bench:"

// redisBytesPerKey makes one decision on each of n fresh keys, with a rule
// whose state lives an hour (so none expires while counting), and returns
// the growth of INFO memory used_memory per key. The keys are unlinked
// before and after.
func redisBytesPerKey(c *redis.Client, s limiter.Store, alg limiter.Algorithm, n, conc int) (float64, error) {
	ctx := context.Background()
	if err := unlinkBenchKeys(ctx, c); err != nil {
		return 0, err
	}
	before, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	rule := limiter.Rule{Name: "mem", Algorithm: alg, Limit: 1, Period: time.Hour, Burst: 1}
	var wg sync.WaitGroup
	var failed atomic.Value
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += conc {
				if _, err := s.Decide(ctx, limiter.Request{Key: "mem:" + strconv.Itoa(i), Rule: rule}); err != nil {
					failed.Store(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, fmt.Errorf("bench: memory: %w", err)
	}
	after, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), unlinkBenchKeys(ctx, c)
}

// usedMemory is INFO memory's used_memory.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	f, err := info(ctx, c, "memory")
	if err != nil {
		return 0, err
	}
	v, ok := f["used_memory"]
	if !ok {
		return 0, errors.New("bench: INFO memory has no used_memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// redisCPUSeconds is the user and system CPU of the Redis server of c so
// far (INFO cpu), or 0 without Redis or when it cannot tell.
func redisCPUSeconds(c *redis.Client) float64 {
	if c == nil {
		return 0
	}
	f, err := info(context.Background(), c, "cpu")
	if err != nil {
		return 0
	}
	sys, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
	user, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
	return sys + user
}

// info is the fields of an INFO section of c's server (go-redis InfoMap).
func info(ctx context.Context, c *redis.Client, section string) (map[string]string, error) {
	m, err := c.InfoMap(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("bench: INFO %s: %w", section, err)
	}
	for _, fields := range m {
		return fields, nil // the one section asked for
	}
	return map[string]string{}, nil
}

// unlinkBenchKeys removes every key under benchPrefix.
func unlinkBenchKeys(ctx context.Context, c *redis.Client) error {
	iter := c.Scan(ctx, 0, benchPrefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return fmt.Errorf("bench: UNLINK: %w", err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return fmt.Errorf("bench: UNLINK: %w", err)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("bench: SCAN: %w", err)
	}
	return nil
}
