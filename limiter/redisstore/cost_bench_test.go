package redisstore_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// BenchmarkRedisBatchCost: Redis's cost per decision of the batch scripts,
// 64 callers on 10,000 keys at 100/s each (as `throttled bench decisions`),
// Redis TIME: redis-us/decision is INFO commandstats' EVALSHA usec ÷
// decisions, redis-cpu-us/decision the server's CPU time (user + system)
// ÷ decisions, decisions/batch the batch size.
func BenchmarkRedisBatchCost(b *testing.B) {
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA} {
		b.Run(alg.String(), func(b *testing.B) {
			r := testenv.StartRedis(b)
			c := r.Client()
			s := redisstore.New(c, limiter.WithPrefix("cost:"))
			rule := limiter.Rule{Name: "r", Algorithm: alg, Limit: 100, Period: time.Second}
			ctx := context.Background()
			keys := make([]string, 10_000)
			for i := range keys {
				keys[i] = "client:" + strconv.Itoa(i)
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			cpu0 := testenv.CPUSeconds(b, c)
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i += 7 {
					if _, err := s.Decide(ctx, limiter.Request{Key: keys[i%len(keys)], Rule: rule}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			cpu := testenv.CPUSeconds(b, c) - cpu0
			calls, usec := evalshaStats(b, c)
			n := float64(b.N)
			b.ReportMetric(usec/n, "redis-us/decision")
			b.ReportMetric(cpu*1e6/n, "redis-cpu-us/decision")
			b.ReportMetric(n/calls, "decisions/batch")
		})
	}
}

// evalshaStats are INFO commandstats' calls and usec of EVALSHA.
func evalshaStats(tb testing.TB, c *redis.Client) (calls, usec float64) {
	v := testenv.Info(tb, c, "commandstats")["cmdstat_evalsha"] // calls=N,usec=M,…
	for _, f := range strings.Split(v, ",") {
		k, x, _ := strings.Cut(f, "=")
		switch k {
		case "calls":
			calls, _ = strconv.ParseFloat(x, 64)
		case "usec":
			usec, _ = strconv.ParseFloat(x, 64)
		}
	}
	if calls == 0 {
		tb.Fatalf("INFO commandstats: no EVALSHA (%q)", v)
	}
	return calls, usec
}
