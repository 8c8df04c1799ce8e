package coord_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
)

// t0 is aligned to a second, so 1 s windows start at t0.
var t0 = time.Unix(1_700_000_000, 0)

func newHeartbeat(t *testing.T, c redis.UniversalClient, s coord.HeartbeatSettings) *coord.Heartbeat {
	t.Helper()
	h, err := coord.NewHeartbeat(c, s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHeartbeatSettingsErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tc := range []struct {
		s    coord.HeartbeatSettings
		want string
	}{
		{coord.HeartbeatSettings{Interval: -time.Second}, "Interval"},
		{coord.HeartbeatSettings{Window: -time.Second}, "Window -1s"},
		{coord.HeartbeatSettings{Interval: time.Second, Window: 500 * time.Millisecond}, "shorter than Interval"},
		{coord.HeartbeatSettings{Interval: time.Microsecond}, "at least 1ms"},
	} {
		_, err := coord.NewHeartbeat(c, tc.s)
		if !errors.Is(err, coord.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want ErrBadConfig naming %q", tc.s, err, tc.want)
		}
	}
	if _, err := coord.NewHeartbeat(nil, coord.HeartbeatSettings{}); !errors.Is(err, coord.ErrInvalid) {
		t.Errorf("nil client: err = %v, want ErrBadConfig", err)
	}
	a := newHeartbeat(t, c, coord.HeartbeatSettings{})
	b := newHeartbeat(t, c, coord.HeartbeatSettings{})
	if a.ID() == "" || a.ID() == b.ID() || a.Key() != "throttled:instances" || a.Instances() != 1 {
		t.Errorf("defaults: ids %q %q, key %q, instances %d; want distinct ids, throttled:instances, 1",
			a.ID(), b.ID(), a.Key(), a.Instances())
	}
}

// Three instances beat on one clock (interval 1 s, window 3 s) at fixed
// instants; c falls silent after t0 and b stops at t5.
func TestHeartbeatCountsLiveInstances(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	clock := fakeclock.New(t0)
	prefix := fmt.Sprintf("hb%d:", hbSeq.Add(1))
	hs := map[string]*coord.Heartbeat{}
	for _, id := range []string{"a", "b", "c"} {
		hs[id] = newHeartbeat(t, c, coord.HeartbeatSettings{ID: id, Interval: time.Second, Prefix: prefix, Now: clock.Now})
	}
	s := time.Second
	for i, tc := range []struct {
		at   time.Duration
		who  string // "-b": b stops
		want int
	}{
		{0, "a", 1}, {0, "b", 2}, {0, "c", 3},
		{1 * s, "a", 3}, {1 * s, "b", 3},
		{3 * s, "a", 3},                  // c's beat at t0 is exactly one window old: still live
		{3*s + time.Millisecond, "a", 2}, // a millisecond (the scores' unit) later it is not
		{4 * s, "b", 2},                  // b last beat at t1, within the window
		{5 * s, "-b", 2},                 // Stop removes b from the set...
		{5 * s, "a", 1},                  // ...so a counts it out at once
		{9 * s, "a", 1},                  // alone, never 0
		{9 * s, "c", 2},                  // c comes back
	} {
		at := tc.at
		clock.Set(t0.Add(at))
		h := hs[strings.TrimPrefix(tc.who, "-")]
		if strings.HasPrefix(tc.who, "-") {
			if err := h.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		n, err := h.Beat(context.Background())
		if err != nil || n != tc.want || h.Instances() != tc.want {
			t.Errorf("step %d: %s beats at t0+%v: %d (Instances %d), %v; want %d", i, tc.who, at, n, h.Instances(), err, tc.want)
		}
	}
	if _, err := hs["b"].Beat(context.Background()); !errors.Is(err, coord.ErrStopped) {
		t.Errorf("Beat after Stop: %v, want ErrStopped", err)
	}
	if ttl := c.PTTL(context.Background(), prefix+"instances").Val(); ttl <= 0 || ttl > 6*time.Second {
		t.Errorf("set TTL %v, want (0, 2 windows]", ttl)
	}
}

// hbTicker is a ticker driven by the test.
type hbTicker chan time.Time

func (tk hbTicker) tick(d time.Duration) (<-chan time.Time, func()) { return tk, func() {} }

// Run beats on its ticker with Redis TIME; Stop removes the instance; while
// Redis is down the last count is kept.
func TestHeartbeatRun(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.DeadlineClient(-1)
	prefix := fmt.Sprintf("hb%d:", hbSeq.Add(1))
	var hs [3]*coord.Heartbeat
	ticks := make(hbTicker)
	done := make(chan error, len(hs))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range hs {
		hs[i] = newHeartbeat(t, c, coord.HeartbeatSettings{Interval: time.Second, Prefix: prefix, Tick: ticks.tick})
		go func() { done <- hs[i].Run(ctx) }()
	}
	tickAll := func(n int) {
		for range n {
			select {
			case ticks <- time.Now():
			case <-time.After(5 * time.Second):
				t.Fatal("Run does not take ticks")
			}
		}
	}
	hbWait(t, "3 instances", func() bool {
		tickAll(3)
		return hs[0].Instances() == 3 && hs[1].Instances() == 3 && hs[2].Instances() == 3
	})
	if err := hs[2].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run after Stop returned %v, want nil", err)
	}
	if err := hs[2].Run(ctx); !errors.Is(err, coord.ErrStopped) {
		t.Errorf("Run on a stopped heartbeat: %v, want ErrStopped", err)
	}
	hbWait(t, "2 instances", func() bool { tickAll(2); return hs[0].Instances() == 2 && hs[1].Instances() == 2 })

	r.Kill()
	hbWait(t, "a failed beat", func() bool { tickAll(2); return hs[0].Err() != nil })
	tickAll(2)
	if n := hs[0].Instances(); n != 2 {
		t.Errorf("Instances() = %d with Redis down, want the last count 2", n)
	}
	cancel()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel returned %v, want context.Canceled", err)
		}
	}
}

// hbWait polls cond every 10 ms for at most 5 s.
func hbWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s within 5s", what)
}

var hbSeq atomic.Int64
