package tokenlease_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// BenchmarkOneOffKeys: the heap a leasing store keeps for 300,000 keys
// each decided once within one TTL (a flood of one-off keys), over a
// shared in-memory store that keeps one key (the rest share its overflow
// state), so the heap measured is the lease table's. It reports the
// table's heap (MiB), its keys (at most DefaultMaxKeys) and its heap per
// key kept (B/record).
func BenchmarkOneOffKeys(b *testing.B) {
	const keys = 300_000
	names := make([]string, keys)
	for i := range names {
		names[i] = "client-" + strconv.Itoa(i)
	}
	var used, kept float64
	for b.Loop() {
		clock := fakeclock.New(t0)
		shared := limiter.NewMemory(limiter.WithClock(clock.Now), limiter.WithMaxKeys(1))
		before := heap()
		s, err := tokenlease.New(shared, tokenlease.Settings{Now: clock.Now})
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range names {
			if _, err := s.Decide(context.Background(), limiter.Request{Key: k, Rule: rule}); err != nil {
				b.Fatal(err)
			}
		}
		used, kept = float64(heap()-before), float64(s.Len())
		runtime.KeepAlive(s)
	}
	b.ReportMetric(used/(1<<20), "MiB")
	b.ReportMetric(kept, "keys")
	b.ReportMetric(used/kept, "B/record")
}

// heap is the bytes in use on the heap after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
