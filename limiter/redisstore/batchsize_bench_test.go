package redisstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// BenchmarkBatchSizeCost: Redis's CPU per decision (INFO cpu, user +
// system) by the number of decisions in one batch script call, the token
// bucket on 10,000 keys at 100/s, one caller sending one call at a time:
// the cost of a call (reading, parsing, the Lua call, replying, waking
// up) against the cost of a decision in it.
func BenchmarkBatchSizeCost(b *testing.B) {
	for _, n := range []int{1, 4, 8, 16, 32, 64} {
		b.Run("decisions="+strconv.Itoa(n), func(b *testing.B) {
			c := testenv.StartRedis(b).Client()
			ctx := context.Background()
			s := New(c, limiter.WithPrefix("bs:"))
			a := limiter.TokenBucket
			if err := c.ScriptLoad(ctx, batchSources[a]).Err(); err != nil {
				b.Fatal(err)
			}
			keys, args := make([]string, n), make([]any, 0, 8+2*n)
			cpu0, k := testenv.CPUSeconds(b, c), 0
			b.ResetTimer()
			for range b.N {
				args = append(args[:0], 1, "", 100, 1_000_000, 100, 1, 1, "")
				for i := range keys {
					field := "client:" + strconv.Itoa(k%10_000)
					k += 7
					keys[i] = s.Bucket(a, field)
					args = append(args, 0, field)
				}
				if err := c.EvalSha(ctx, batchShas[a].(string), keys, args...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((testenv.CPUSeconds(b, c)-cpu0)*1e6/float64(b.N*n), "redis-cpu-us/decision")
		})
	}
}
