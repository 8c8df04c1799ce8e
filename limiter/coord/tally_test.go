package coord_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
)

// Two instances publish on one clock (window 3 s) at fixed instants: a
// reader sees each one's last counts; b, silent after t1, is dropped by
// a's publish at t5, counts and all.
func TestTallySharesCountsOfLiveInstances(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	clock := fakeclock.New(t0)
	tallies := map[string]*coord.Tally{}
	for _, id := range []string{"a", "b"} {
		tl, err := coord.NewTally(c, coord.TallySettings{ID: id, Window: 3 * time.Second, Prefix: "tally1:", Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		tallies[id] = tl
	}
	ctx := context.Background()
	type counts = map[string]float64
	for i, tc := range []struct {
		at     time.Duration
		who    string
		counts counts
		want   map[string]counts
	}{
		{0, "a", counts{"free": 10}, map[string]counts{"a": {"free": 10}}},
		{time.Second, "b", counts{"free": 5, "premium": 7}, map[string]counts{"a": {"free": 10}, "b": {"free": 5, "premium": 7}}},
		{2 * time.Second, "a", counts{"free": 30, "premium": 1}, map[string]counts{"a": {"free": 30, "premium": 1}, "b": {"free": 5, "premium": 7}}},
		{5 * time.Second, "a", counts{"free": 50, "premium": 2}, map[string]counts{"a": {"free": 50, "premium": 2}}},
	} {
		clock.Set(t0.Add(tc.at))
		if err := tallies[tc.who].Publish(ctx, tc.counts); err != nil {
			t.Fatalf("t%d: %v", i, err)
		}
		got, err := tallies["b"].Read(ctx)
		if err != nil {
			t.Fatalf("t%d: read: %v", i, err)
		}
		if !maps.EqualFunc(got, tc.want, maps.Equal) {
			t.Fatalf("t%d (t0+%v, %s published): read %v, want %v", i, tc.at, tc.who, got, tc.want)
		}
	}
	if n := c.HLen(ctx, tallies["a"].Key()).Val(); n != 3 {
		t.Errorf("tally hash holds %d fields after the read at t5, want a's 3 (b's deleted)", n)
	}
	if ttl := c.PTTL(ctx, tallies["a"].Key()).Val(); ttl <= 0 || ttl > 6*time.Second {
		t.Errorf("tally hash TTL %v, want two windows at most", ttl)
	}
}

func TestTallyRefusesBadInput(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, s := range []coord.TallySettings{{Window: -time.Second}, {ID: "a\nb"}} {
		if _, err := coord.NewTally(c, s); !errors.Is(err, coord.ErrInvalid) {
			t.Errorf("NewTally(%+v): err = %v, want ErrInvalid", s, err)
		}
	}
	if _, err := coord.NewTally(nil, coord.TallySettings{}); !errors.Is(err, coord.ErrInvalid) {
		t.Errorf("nil client: err = %v, want ErrInvalid", err)
	}
	tl, err := coord.NewTally(c, coord.TallySettings{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"@", "", "x\ny"} {
		err := tl.Publish(context.Background(), map[string]float64{name: 1})
		if !errors.Is(err, coord.ErrInvalid) || !strings.Contains(err.Error(), "counter name") {
			t.Errorf("Publish(%q): err = %v, want ErrInvalid naming the counter", name, err)
		}
	}
}

// A publish costs Redis the same whatever the fleet's size: with 300
// instances in the tally, one more publish runs no command that walks the
// hash (HGETALL, HKEYS, HSCAN…) and only a handful of commands in all.
// Every instance publishes ten times a controller period, so a publish that
// walked every instance's fields cost the fleet N² field reads a tick.
func TestTallyPublishCostIsFlatInTheFleet(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	counts := map[string]float64{"admitted/free": 1, "admitted/premium": 2, "saturation": 0}
	for i := range 300 {
		tl, err := coord.NewTally(c, coord.TallySettings{ID: "i" + strconv.Itoa(i), Prefix: "flat:"})
		if err != nil {
			t.Fatal(err)
		}
		if err := tl.Publish(ctx, counts); err != nil {
			t.Fatal(err)
		}
	}
	tl, err := coord.NewTally(c, coord.TallySettings{ID: "last", Prefix: "flat:"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := tl.Publish(ctx, counts); err != nil {
		t.Fatal(err)
	}
	stats := testenv.Info(t, c, "commandstats")
	inner := 0
	for name, v := range stats {
		cmd := strings.TrimPrefix(name, "cmdstat_")
		if cmd == "evalsha" || cmd == "eval" || strings.HasPrefix(cmd, "config") || cmd == "info" || cmd == "script" {
			continue
		}
		calls, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(v, ",")[0], "calls="))
		inner += calls
		switch cmd {
		case "hgetall", "hkeys", "hvals", "hscan", "scan", "keys":
			t.Errorf("one publish among 300 instances ran %s (%s): its cost grows with the fleet", cmd, v)
		}
	}
	if inner > 4 {
		t.Errorf("one publish ran %d commands inside its script (%v), want at most 4", inner, stats)
	}
}
