package coord_test

import (
	"context"
	"errors"
	"maps"
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
