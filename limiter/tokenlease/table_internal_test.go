package tokenlease

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// TestTableListMatchesMap: decisions from 4 goroutines on 200 keys,
// leasing (Size 4) while MaxKeys 64 (one lease per shard) evicts all the
// time, refills in flight among them: each shard's list then holds its
// map's leases and no other, linked both ways, within its bound. (Order
// by seen is not checked: a decision reads the clock before the lock.)
func TestTableListMatchesMap(t *testing.T) {
	shared := limiter.NewMemory()
	s, err := New(shared, Settings{Size: 4, MaxKeys: 64, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := limiter.Rule{Name: "r", Limit: 1_000_000, Period: time.Second}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3000 {
				k := strconv.Itoa((i*7 + g*13) % 200)
				if _, err := s.Decide(context.Background(), limiter.Request{Key: k, Rule: r}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range s.shards {
		sh := &s.shards[i]
		if len(sh.leases) > sh.max {
			t.Errorf("shard %d: %d leases, want at most %d", i, len(sh.leases), sh.max)
		}
		n := 0
		for l, prev := sh.head, (*lease)(nil); l != nil; prev, l = l, l.next {
			if l.prev != prev || sh.leases[leaseKey{l.rule.Name, l.key}] != l {
				t.Fatalf("shard %d: lease %q linked wrong or not in the map", i, l.key)
			}
			n++
		}
		if n != len(sh.leases) {
			t.Errorf("shard %d: %d leases linked, %d in the map", i, n, len(sh.leases))
		}
	}
}
