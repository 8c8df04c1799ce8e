package redisstore_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

var benchRule = limiter.Rule{Name: "bench", Limit: 1_000_000, Period: time.Second, Burst: 1_000_000}

// benchKeys are built once, so the benchmarks measure decisions, not keys.
var benchKeys = func() []string {
	k := make([]string, 1024)
	for i := range k {
		k[i] = "client:" + strconv.Itoa(i)
	}
	return k
}()

func BenchmarkMemoryDecide(b *testing.B) {
	for _, alg := range limiter.Algorithms() {
		b.Run(alg.String(), func(b *testing.B) {
			s := limiter.NewMemory()
			rule := benchRule
			rule.Algorithm = alg
			if alg == limiter.SlidingWindowLog {
				rule.Limit, rule.Period = 64, time.Millisecond // keep logs short
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _ = s.Decide(ctx, limiter.Request{Key: benchKeys[i&1023], Rule: rule})
			}
		})
	}
}

func BenchmarkMemoryDecideParallel(b *testing.B) {
	s := limiter.NewMemory()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, _ = s.Decide(ctx, limiter.Request{Key: benchKeys[i&1023], Rule: benchRule})
			i++
		}
	})
}

func BenchmarkMemoryDecideInstrumented(b *testing.B) {
	m, err := instrument.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	s := instrument.Store(limiter.NewMemory(), m, "memory")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, _ = s.Decide(ctx, limiter.Request{Key: benchKeys[i&1023], Rule: benchRule, Tier: "free"})
			i++
		}
	})
}

// BenchmarkRedisDecide64 runs decisions from 64 goroutines against a real
// redis-server on loopback; decisions/s is reported as a metric.
func BenchmarkRedisDecide64(b *testing.B) {
	r := testenv.StartRedis(b)
	s := redisstore.New(r.Client())
	ctx := context.Background()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // 64 goroutines in all
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Decide(ctx, limiter.Request{Key: benchKeys[i&1023], Rule: benchRule}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
}

// BenchmarkRedisDecideSerial: one caller, so every batch holds one
// decision and pays a whole pipeline's allocations (go-redis's included).
func BenchmarkRedisDecideSerial(b *testing.B) {
	r := testenv.StartRedis(b)
	s := redisstore.New(r.Client())
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := s.Decide(ctx, limiter.Request{Key: benchKeys[i&1023], Rule: benchRule}); err != nil {
			b.Fatal(err)
		}
	}
}
