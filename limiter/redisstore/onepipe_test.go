package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// TestBatchDefaultOnePipeline: with the default Settings a store keeps one
// pipeline in flight; the decisions asked for meanwhile wait and leave
// together in one batch script when it returns, not in a second pipeline
// of their own (each script call costs Redis about as much as 8–10
// decisions in it).
func TestBatchDefaultOnePipeline(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.DeadlineClient(-1)
	s, err := NewWithSettings(c, Settings{}, limiter.WithPrefix("p:"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Decide(ctx, limiter.Request{Key: "warm", Rule: batchRule}); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r.Pause()
	var once sync.Once
	resume := func() { once.Do(r.Resume) }
	t.Cleanup(resume)
	const n = 21
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.Decide(ctx, limiter.Request{Key: fmt.Sprint("k", i), Rule: batchRule}); err != nil {
				t.Error(err)
			}
		})
	}
	for s.queued()+s.flushing() != n { // each decision waits or holds a pipeline
		time.Sleep(time.Millisecond)
	}
	if f, q := s.flushing(), s.queued(); f != 1 || q != n-1 {
		t.Errorf("pipelines in flight %d, decisions waiting %d: want 1 and %d", f, q, n-1)
	}
	resume()
	wg.Wait()
	if got := testenv.EvalshaCalls(t, c); got != 2 { // the first alone, then the rest in one batch
		t.Errorf("EVALSHA calls = %d, want 2", got)
	}
}
