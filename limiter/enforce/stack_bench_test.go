package enforce_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// BenchmarkCheckKeysFreshGoroutine is a rate limit service call as gRPC
// serves it: CheckKeys for one descriptor on a goroutine of its own (one
// per stream), whose stack starts small and grows by copying when the
// call's frames do not fit. What a call costs beyond
// BenchmarkCheckKeysSameGoroutine is that goroutine and its stack's growth.
func BenchmarkCheckKeysFreshGoroutine(b *testing.B) {
	e, qs := checkKeysBench(b)
	done := make(chan error)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		go func() {
			_, err := e.CheckKeys(context.Background(), qs[i%len(qs)], nil)
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckKeysSameGoroutine is BenchmarkCheckKeysFreshGoroutine's
// calls on the benchmark's goroutine, whose stack has grown once.
func BenchmarkCheckKeysSameGoroutine(b *testing.B) {
	e, qs := checkKeysBench(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := e.CheckKeys(context.Background(), qs[i%len(qs)], nil); err != nil {
			b.Fatal(err)
		}
	}
}

// checkKeysBench is an enforcer with one rule per key on the in-memory
// store and 1,000 one-query checks, one per key.
func checkKeysBench(b *testing.B) (*enforce.Enforcer, [][]enforce.Query) {
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 1e11, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}}},
	}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		b.Fatal(err)
	}
	qs := make([][]enforce.Query, 1000)
	for i := range qs {
		qs[i] = []enforce.Query{{Rule: "per-key", Key: "k" + strconv.Itoa(i)}}
	}
	return e, qs
}
