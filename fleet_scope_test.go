package throttled

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/signals"
)

// Two sidecars, each with its own backend: "hot" (its inner loop refuses
// half its load: saturation 0.5) and "fine" (saturation 0), through one
// real Redis: their tallies, the leader's in-process signals, its loop and
// publisher, and each instance's subscriber. With controller.scope
// instance the hot instance's tiers are cut and the fine one's stay at 1
// all along; once fine stops publishing, its entries leave the hash.
func TestInstanceScopeCutsTheHotInstanceAlone(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const prefix = "scope1:"
	const period = 100 * time.Millisecond
	tallies := map[string]*coord.Tally{}
	subs := map[string]*coord.Subscriber{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, id := range []string{"hot", "fine"} {
		tl, err := coord.NewTally(r.Client(), coord.TallySettings{ID: id, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		tallies[id] = tl
		sub, err := coord.NewSubscriber(r.Client(), scopeSubSettings(prefix, id), nil)
		if err != nil {
			t.Fatal(err)
		}
		subs[id] = sub
		wg.Go(func() { _ = sub.Run(ctx) })
	}
	sat := map[string]float64{"hot": 0.5, "fine": 0}
	var fineGone atomic.Bool // fine stops publishing (killed): its entry must go
	// Each instance publishes its saturation, as publishAdmitted does.
	wg.Go(func() {
		for ctx.Err() == nil {
			for id, tl := range tallies {
				if id == "fine" && fineGone.Load() {
					continue
				}
				_ = tl.Publish(ctx, map[string]float64{"admitted/free": 1, "admitted/premium": 1, saturationName: sat[id]})
			}
			select {
			case <-ctx.Done():
			case <-time.After(period / 4):
			}
		}
	})
	// The leader starts once both instances are in the tally: one it has
	// not read yet applies the fleet's multipliers, by design.
	testenv.WaitFor(t, 10*time.Second, "both instances in the tally", func() bool {
		counts, err := tallies["fine"].Read(ctx)
		return err == nil && counts["hot"] != nil && counts["fine"] != nil
	})
	loop := scopeLeader(t, r, prefix, tallies["fine"], period)
	wg.Go(func() { _ = loop.Run(ctx) })

	// Until the hot instance's free tier is cut, and for ten periods after,
	// the fine instance applies 1 to every tier.
	var cutAt time.Time
	testenv.WaitFor(t, 20*time.Second, "the fine instance keeps 1 while the hot one is cut for 10 periods", func() bool {
		for _, tier := range []string{"free", "premium"} {
			if got := subs["fine"].Multiplier(tier); got != 1 {
				t.Fatalf("fine instance's %s multiplier %v, want 1 (its own backend is fine); hot's free %v",
					tier, got, subs["hot"].Multiplier("free"))
			}
		}
		if cutAt.IsZero() && subs["hot"].Multiplier("free") < 1 {
			cutAt = time.Now()
		}
		return !cutAt.IsZero() && time.Since(cutAt) > 10*period
	})
	if got := subs["hot"].Multiplier("free"); !(got < 1) {
		t.Fatalf("hot instance's free multiplier %v, want a cut below 1", got)
	}

	// Killed, fine leaves the leader's reading (silent for the tally's
	// freshness, 1 s here): its own hash ("<hash>@<id>", beside the fleet's
	// hash) is no longer of the current publication, and leaves the ids'
	// set the next leader loads.
	fleetKey := prefix + "multipliers"
	own, ids := "{"+fleetKey+"}@fine", "{"+fleetKey+"}@"
	if v, err := r.Client().HGet(ctx, own, "free").Result(); err != nil || v != "1" {
		t.Fatalf("%s free = %q, %v; want 1 while hot is cut", own, v, err)
	}
	fineGone.Store(true)
	testenv.WaitFor(t, 20*time.Second, "fine gone from the instances with own factors", func() bool {
		member, err := r.Client().SIsMember(ctx, ids, "fine").Result()
		if err != nil {
			t.Fatal(err)
		}
		fleetAt, err1 := r.Client().HGet(ctx, fleetKey, "_at").Result()
		ownAt, err2 := r.Client().HGet(ctx, own, "_at").Result()
		if err1 != nil || (err2 != nil && err2 != redis.Nil) {
			t.Fatal(err1, err2)
		}
		return !member && ownAt != fleetAt
	})
}

// scopeLeader is the fleet's leader on tally's instance: in-process
// signals over the fleet's tally, saturation as the refused fraction with
// target 0.05, tiers premium and free.
func scopeLeader(t *testing.T, r *testenv.Redis, prefix string, tally *coord.Tally, period time.Duration) *controller.Loop {
	t.Helper()
	src, err := signals.NewInProcess(fleetGatherer{local: prometheus.NewRegistry(), tally: tally, timeout: period, fresh: time.Second},
		signals.InProcessSettings{SaturationGauge: controller.SaturationMetric}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := coord.Settings{Prefix: prefix}
	lease, err := coord.NewLease(r.Client(), cs.LeaseKey(), 10*period)
	if err != nil {
		t.Fatal(err)
	}
	cs.Lease = lease
	pub, err := coord.NewPublisher(r.Client(), cs)
	if err != nil {
		t.Fatal(err)
	}
	law, err := controller.NewLaw(scopeLawSettings(period))
	if err != nil {
		t.Fatal(err)
	}
	source := controller.FromSignals(src, map[signals.Kind]float64{signals.Saturation: 0.05}, signals.Saturation)
	loop, err := controller.NewLoop(law, source, pub, lease, nil)
	if err != nil {
		t.Fatal(err)
	}
	return loop
}

func scopeLawSettings(period time.Duration) controller.Settings {
	return controller.Settings{Period: period, Scope: controller.ScopeInstance,
		Tiers: []controller.Tier{{Name: "premium", Priority: 0}, {Name: "free", Priority: 1}}}
}

func scopeSubSettings(prefix, id string) coord.Settings {
	return coord.Settings{Prefix: prefix, PollInterval: 50 * time.Millisecond, Instance: id}
}
