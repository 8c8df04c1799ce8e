package fallback_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/fallback"
)

// The heartbeat is the fallback's instance counter: while Redis is down the
// local share divides the quota by the last count seen.
func TestHeartbeatCountsForFallback(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.DeadlineClient(-1)
	prefix := fmt.Sprintf("hb%d:", fbSeq.Add(1))
	var hs [3]*coord.Heartbeat
	for i := range hs {
		h, err := coord.NewHeartbeat(c, coord.HeartbeatSettings{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Stop(context.Background()) })
		hs[i] = h
		if _, err := hs[i].Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := hs[0].Beat(context.Background()); n != 3 || err != nil {
		t.Fatalf("first instance counts %d, %v; want 3", n, err)
	}
	clock := fakeclock.New(t0)
	f := newFallback(t, fbStore(c), fallback.Settings{Counter: hs[0], Now: clock.Now}, nil)
	r.Kill()
	if _, err := hs[0].Beat(context.Background()); err == nil {
		t.Fatal("beat succeeded with Redis killed")
	}
	if f.Instances() != 3 {
		t.Fatalf("Fallback.Instances() = %d, want the heartbeat's 3", f.Instances())
	}
	// Burst 9 on 3 instances: 3 here.
	rule := limiter.Rule{Limit: 9, Period: time.Second, Burst: 9}
	for i, want := range []bool{true, true, true, false} {
		d, err := f.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule})
		if err != nil || !d.Fallback || d.Allowed != want {
			t.Errorf("decision %d: %+v, %v; want fallback allowed=%v", i, d, err, want)
		}
	}
}
