package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// argsHook records the number of arguments of every EVALSHA.
type argsHook struct {
	mu   sync.Mutex
	args []int
}

func (h *argsHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *argsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *argsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" {
			h.mu.Lock()
			h.args = append(h.args, len(cmd.Args()))
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// TestBatchSendsRuleOnce: a batch of decisions of one rule sends the
// rule's arguments once, and per decision only its key and its client key
// (with one rule set, no set numbers); each decision still gets its own
// answer.
func TestBatchSendsRuleOnce(t *testing.T) {
	var h argsHook
	s, c, resume := stalled(t, Settings{}, func(_ *Store, c *redis.Client) { c.AddHook(&h) })
	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, err := s.Decide(context.Background(), limiter.Request{Key: fmt.Sprint("k", i), Rule: batchRule})
			if err != nil || d.Remaining != 99 {
				t.Errorf("k%d: remaining %d, %v; want 99", i, d.Remaining, err)
			}
		})
	}
	untilQueued(t, s, n)
	resume()
	wg.Wait()
	if got := testenv.EvalshaCalls(t, c); got != 2 {
		t.Fatalf("EVALSHA calls = %d, want the stuck one and one batch", got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// evalsha, sha, numkeys, the keys, the number of sets, 7 rule
	// arguments, then a client key per decision (of one set, no set
	// numbers): the stuck one alone, then the batch
	if want := []int{3 + 1 + 1 + 7 + 1, 3 + n + 1 + 7 + n}; fmt.Sprint(h.args) != fmt.Sprint(want) {
		t.Errorf("EVALSHA arguments %v, want %v", h.args, want)
	}
}
