package rls_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/rls"
)

// BenchmarkShouldRateLimit64 is decisions per second over gRPC with 64
// calls in flight on one connection (as from one Envoy), each caller with
// a key of its own, on the in-memory store and on Redis. Client, server
// (and Redis) share the machine.
func BenchmarkShouldRateLimit64(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchRLS(b, limiter.NewMemory()) })
	b.Run("redis", func(b *testing.B) { benchRLS(b, redisStore(testenv.StartRedis(b).Client())) })
}

func benchRLS(b *testing.B, store limiter.Store) {
	e, err := enforce.New(store, enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 1e11, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}}},
	}, enforce.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	c, _ := serve(b, e, rls.Settings{}, nil)
	var seq atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((64 + procs - 1) / procs)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := request(0, desc("rule", "per-key", "api_key", fmt.Sprintf("k%d", seq.Add(1))))
		for pb.Next() {
			r, err := c.ShouldRateLimit(context.Background(), req)
			if err != nil || r.GetOverallCode() != ok {
				b.Errorf("ShouldRateLimit: %v, %v", r.GetOverallCode(), err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkShouldRateLimitInProcess is the server's own part of a call,
// without gRPC: the mapping of a descriptor, the decision on the in-memory
// store and the response.
func BenchmarkShouldRateLimitInProcess(b *testing.B) {
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 1e11, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}}},
	}, enforce.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := rls.New(e, rls.Settings{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := request(0, desc("rule", "per-key", "api_key", "bench-key"))
	b.ReportAllocs()
	for b.Loop() {
		if r, err := srv.ShouldRateLimit(context.Background(), req); err != nil || r.GetOverallCode() != ok {
			b.Fatalf("ShouldRateLimit: %v, %v", r.GetOverallCode(), err)
		}
	}
}
