package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// BenchmarkRedisBatchCost: Redis's cost per decision of the batch scripts,
// 64 callers on 10,000 keys at 100/s each (as `throttled bench decisions`),
// Redis TIME, after one pass over the keys: redis-us/decision is INFO
// commandstats' EVALSHA usec ÷ decisions (the scripts' own time),
// redis-cpu-us/decision the server's CPU time (user + system) ÷ decisions,
// decisions/batch the batch size, each the median of 9 windows of b.N/9
// decisions (Redis's stats reset before each): one figure moves by ±20 %
// between runs on a shared host, the median of windows much less.
// redis-us/decision-least is the least window's: usec is wall time inside
// the script, and on a loaded host a script preempted midway reads long
// (the CPU figure does not), so the least window is the one least
// disturbed; redis-us/decision-iqr is the spread of the windows (the third
// quartile less the first). scripts/bench-redis-batch.sh runs it in turn
// with an older build and prints the medians of runs.
func BenchmarkRedisBatchCost(b *testing.B) {
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA} {
		b.Run(alg.String(), func(b *testing.B) {
			r := testenv.StartRedis(b)
			c := r.Client()
			s := redisstore.New(c, limiter.WithPrefix("cost:"))
			rule := limiter.Rule{Name: "r", Algorithm: alg, Limit: 100, Period: time.Second}
			keys := make([]string, 10_000)
			for i := range keys {
				keys[i] = "client:" + strconv.Itoa(i)
			}
			decideAll(b, s, rule, keys, len(keys)) // every key once: a steady state
			const w = 9
			per := max(64, b.N/w)
			var us, cpu, size [w]float64
			b.ResetTimer()
			for i := range w {
				if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
					b.Fatal(err)
				}
				cpu0 := testenv.CPUSeconds(b, c)
				decideAll(b, s, rule, keys, per)
				cpu[i] = (testenv.CPUSeconds(b, c) - cpu0) * 1e6 / float64(per)
				calls, usec := testenv.CommandStat(b, c, "evalsha")
				if calls == 0 {
					b.Fatal("INFO commandstats: no EVALSHA")
				}
				us[i], size[i] = usec/float64(per), float64(per)/float64(calls)
			}
			b.StopTimer()
			b.ReportMetric(slices.Min(us[:]), "redis-us/decision-least")
			b.ReportMetric(median(us[:]), "redis-us/decision")
			b.ReportMetric(us[3*w/4]-us[w/4], "redis-us/decision-iqr") // us is sorted now
			b.ReportMetric(median(cpu[:]), "redis-cpu-us/decision")
			b.ReportMetric(median(size[:]), "decisions/batch")
		})
	}
}

// decideAll makes n decisions of rule from 64 goroutines, each going
// through keys in steps of 7 from its own start.
func decideAll(b *testing.B, s *redisstore.Store, rule limiter.Rule, keys []string, n int) {
	const callers = 64
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			ctx := context.Background()
			for i, k := 0, g*len(keys)/callers; i < (n+callers-1-g)/callers; i, k = i+1, k+7 {
				if _, err := s.Decide(ctx, limiter.Request{Key: keys[k%len(keys)], Rule: rule}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// median is the median of x (sorted in place).
func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}
