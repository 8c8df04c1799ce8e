package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// Prefix is the prefix of every key the benches write into Redis.
const Prefix = "throttled-bench:"

// DecisionsResult is what `throttled bench decisions --json` prints.
type DecisionsResult struct {
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

// Decisions makes decisions of algorithm alg on s from conc goroutines,
// over nkeys keys in turn, for dur, with a quota none of them reaches, and
// measures their rate, latency and this process's CPU. The caller sets
// the result's Store.
func Decisions(s limiter.Store, alg limiter.Algorithm, conc, nkeys int, dur time.Duration) DecisionsResult {
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
	cpu0, start := overload.CPUTime(), time.Now()
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
	el, cpu := time.Since(start), (overload.CPUTime() - cpu0).Seconds()
	q := quantiles(lat)
	return DecisionsResult{Algorithm: alg.String(), Concurrency: conc, Keys: nkeys, DurationSeconds: el.Seconds(),
		Decisions: n.Load(), Errors: errs.Load(), DecisionsPerSec: float64(n.Load()) / el.Seconds(),
		P50Micros: q(0.5), P99Micros: q(0.99), P999Micros: q(0.999), CPUSeconds: cpu}
}

// quantiles sorts the latencies of every goroutine together and returns
// their quantile function, in microseconds (0 without any).
func quantiles(lat [][]time.Duration) func(p float64) float64 {
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))]) / float64(time.Microsecond)
	}
}

// OpenStore opens the store of `bench decisions --store kind`: memory, or
// redis at url (a client of poolSize connections, returned for the caller
// to close, and keys under Prefix).
func OpenStore(kind, url string, poolSize int, set redisstore.Settings) (limiter.Store, *redis.Client, error) {
	switch kind {
	case "memory":
		return limiter.NewMemory(), nil, nil
	case "redis":
		rdb, err := NewRedis(url, poolSize)
		if err != nil {
			return nil, nil, err
		}
		s, err := redisstore.NewWithSettings(rdb, set, limiter.WithPrefix(Prefix))
		if err != nil {
			rdb.Close()
			return nil, nil, fmt.Errorf("bench: --max-batch or --pipelines: %w", err)
		}
		return s, rdb, nil
	}
	return nil, nil, fmt.Errorf("bench: --store %q: want memory or redis", kind)
}

// NewRedis is a client of the Redis at url (--redis-url) with poolSize
// connections, whose calls end with their context.
func NewRedis(url string, poolSize int) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("bench: --redis-url: %w", err)
	}
	opt.PoolSize, opt.ContextTimeoutEnabled = poolSize, true
	return redis.NewClient(opt), nil
}
