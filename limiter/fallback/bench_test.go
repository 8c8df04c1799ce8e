package fallback_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// BenchmarkSharedDecide is a shared decision through the fallback on a
// real Redis, 64 callers, with the late call's run-on owned by the
// fallback (a goroutine, channel and timer per decision: CallTimeout) or
// by the store's batch (redisstore.Settings.CallTimeout, the call inline),
// as throttled serve wires it. MaxDetached is above the callers: it counts
// every call in flight, not only the late ones (64 callers reach the
// default 64 on a healthy Redis and fall back). allocs/op and B/op do not depend on the
// machine's load; ns/op does.
func BenchmarkSharedDecide(b *testing.B) {
	c := testenv.StartRedis(b).DeadlineClient(-1)
	for _, tc := range []struct {
		name  string
		store redisstore.Settings
		fb    fallback.Settings
	}{
		{"fallback-timeout", redisstore.Settings{}, fallback.Settings{Deadline: time.Second,
			CallTimeout: 2 * time.Second, MaxDetached: 256}},
		{"store-timeout", redisstore.Settings{CallTimeout: 2 * time.Second}, fallback.Settings{Deadline: time.Second}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := redisstore.NewWithSettings(c, tc.store, limiter.WithPrefix("bench-"+tc.name+":"))
			if err != nil {
				b.Fatal(err)
			}
			f, err := fallback.New(s, tc.fb, nil)
			if err != nil {
				b.Fatal(err)
			}
			rule := limiter.Rule{Name: "r", Limit: 1e9, Period: time.Second, Fallback: limiter.FallbackAllow}
			var seq atomic.Int64
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := limiter.Request{Key: fmt.Sprint("k", seq.Add(1)), Rule: rule}
				for pb.Next() {
					if d, err := f.Decide(context.Background(), req); err != nil || d.Fallback {
						b.Errorf("Decide: fallback %v, %v", d.Fallback, err)
						return
					}
				}
			})
		})
	}
}
