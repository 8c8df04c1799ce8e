package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// TestFieldPacksAdmittedOnlyWhenItDiffers: a token bucket's or GCRA's
// field holds 20 bytes (the units sent, the last update, the expiry) when
// the units admitted equal the units sent, as they do at multiplier 1, and
// 28 (the units admitted too) when they differ; the decisions across both
// forms are the memory store's, batched and not.
func TestFieldPacksAdmittedOnlyWhenItDiffers(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	steps := []struct {
		m    float64
		size int64
	}{{1, 20}, {1, 20}, {0.5, 28}, {0.5, 28}, {1, 20}}
	for _, batch := range []int{0, 1} {
		for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA} {
			clock := fakeclock.New(t0)
			mem := limiter.NewMemory(limiter.WithClock(clock.Now))
			s, err := redisstore.NewWithSettings(c, redisstore.Settings{MaxBatch: batch},
				limiter.WithPrefix("fs:"), limiter.WithClock(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			key := alg.String() + string(rune('0'+batch))
			rule := limiter.Rule{Algorithm: alg, Limit: 10, Period: time.Second, Burst: 10}
			for i, st := range steps {
				req := limiter.Request{Key: key, Rule: rule, Multiplier: st.m}
				want, err1 := mem.Decide(ctx, req)
				got, err2 := s.Decide(ctx, req)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if got != want {
					t.Errorf("%v (MaxBatch %d) step %d, m %v: redis %+v, memory %+v", alg, batch, i, st.m, got, want)
				}
				if n := c.HStrLen(ctx, s.Bucket(alg, key), key).Val(); n != st.size {
					t.Errorf("%v (MaxBatch %d) step %d, m %v: field of %d bytes, want %d", alg, batch, i, st.m, n, st.size)
				}
				clock.Add(30 * time.Millisecond)
			}
		}
	}
}
