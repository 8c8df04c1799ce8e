package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// TestBatchRuleSetsAndErrorsInOrder: one batch of decisions of two rules,
// interleaved, with keys of the wrong type among them (twice in a row and
// last): each decision gets the answer of its own rule and key, in order,
// whether the decision before it had the same rule set, another, or
// failed; each bad key fails alone.
func TestBatchRuleSetsAndErrorsInOrder(t *testing.T) {
	ruleB := limiter.Rule{Name: "b2", Limit: 50, Period: time.Hour, Burst: 50}
	s, c, resume := stalled(t, Settings{}, func(s *Store, c *redis.Client) {
		if err := c.RPush(context.Background(), s.Bucket(limiter.TokenBucket, "bad"), "x").Err(); err != nil {
			t.Fatal(err)
		}
	})
	type step struct {
		key  string
		rule limiter.Rule
		want int64 // remaining; -1: WRONGTYPE
	}
	steps := []step{
		{"k1", batchRule, 99}, {"k2", ruleB, 49}, {"k1", batchRule, 98}, {"bad", batchRule, -1},
		{"bad", ruleB, -1}, {"k3", batchRule, 99}, {"k2", ruleB, 48}, {"k4", ruleB, 49},
		{"k2", ruleB, 47}, {"k1", batchRule, 97}, {"bad", batchRule, -1},
	}
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		if s.Bucket(limiter.TokenBucket, k) == s.Bucket(limiter.TokenBucket, "bad") {
			t.Fatalf("%s shares the bad key's bucket", k)
		}
	}
	got := make([]chan string, len(steps))
	for i, st := range steps { // queued in order: the batch's order
		got[i] = make(chan string, 1)
		go func() {
			d, err := s.Decide(context.Background(), limiter.Request{Key: st.key, Rule: st.rule})
			if err != nil {
				got[i] <- err.Error()
				return
			}
			got[i] <- strconv.FormatInt(d.Remaining, 10)
		}()
		untilQueued(t, s, i+1)
	}
	resume()
	for i, st := range steps {
		g := <-got[i]
		switch {
		case st.want < 0 && !strings.Contains(g, "WRONGTYPE"):
			t.Errorf("decision %d (%s): %s, want WRONGTYPE", i, st.key, g)
		case st.want >= 0 && g != strconv.FormatInt(st.want, 10):
			t.Errorf("decision %d (%s, limit %d): remaining %s, want %d", i, st.key, st.rule.Limit, g, st.want)
		}
	}
	if n := testenv.EvalshaCalls(t, c); n != 2 {
		t.Errorf("EVALSHA calls = %d, want the stuck one and one batch", n)
	}
}
