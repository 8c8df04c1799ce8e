package coord

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// The enforcement core takes the subscriber as its MultiplierSource.
var _ multiplier.Source = (*Subscriber)(nil)

// mtClock is a fake clock safe for concurrent use.
type mtClock struct{ ns atomic.Int64 }

func (c *mtClock) Now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *mtClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// mtAge reads throttled_multiplier_age_seconds from reg.
func mtAge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "throttled_multiplier_age_seconds" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("throttled_multiplier_age_seconds is not registered")
	return 0
}

// TestSubscriberStaleness drives what a subscriber accepts and applies at
// fixed instants t0..t9 of a fake clock (StaleAfter 15 s) that runs an hour
// ahead of the controller's: staleness is judged by when this instance
// received a set, never by comparing the controller's clock with its own.
func TestSubscriberStaleness(t *testing.T) {
	clock := &mtClock{}
	reg := prometheus.NewRegistry()
	sub, err := NewSubscriber(nil, Settings{Now: clock.Now}, reg)
	if err != nil {
		t.Fatal(err)
	}
	s := time.Second
	const skew = time.Hour // the subscriber's clock minus the controller's
	set := func(epoch uint64, at time.Duration, free float64) *multiplier.Set {
		m := mtSet(epoch, mt0.Add(at), map[string]float64{"free": free, "premium": 0.9})
		return &m
	}
	steps := []struct {
		name     string
		now      time.Duration // since mt0, on the controller's clock
		offer    *multiplier.Set
		accepted bool
		free     float64 // Multiplier("free") afterwards
		origin   Origin
		epoch    uint64
		age      float64 // the gauge, seconds since the set was received
	}{
		{"t0: nothing yet", 0, nil, false, 1, OriginNone, 0, math.Inf(1)},
		{"t1: first set, an hour off this clock: applied", 0, set(5, 0, 0.5), true, 0.5, OriginRedis, 5, 0},
		{"t2: older epoch ignored", 5 * s, set(4, 5*s, 0.1), false, 0.5, OriginRedis, 5, 5},
		{"t3: same epoch, later: heartbeat", 10 * s, set(5, 10*s, 0.5), true, 0.5, OriginRedis, 5, 0},
		{"t4: same epoch, same At (a poll): not a heartbeat", 12 * s, set(5, 10*s, 0.5), false, 0.5, OriginRedis, 5, 2},
		{"t5: StaleAfter after receipt: still applied", 25 * s, nil, false, 0.5, OriginRedis, 5, 15},
		{"t6: longer: 1", 25*s + time.Millisecond, nil, false, 1, OriginStale, 5, 15.001},
		{"t7: older epoch taken once stale (Redis lost the hash)", 26 * s, set(3, 26*s, 0.7), true, 0.7, OriginRedis, 3, 0},
		{"t8: invalid set ignored", 27 * s, set(9, 27*s, math.NaN()), false, 0.7, OriginRedis, 3, 1},
		{"t9: same epoch, earlier At (the controller's clock stepped back): heartbeat", 28 * s, set(3, 20*s, 0.7), true, 0.7, OriginRedis, 3, 0},
	}
	for _, st := range steps {
		clock.Set(mt0.Add(skew + st.now))
		if st.offer != nil {
			if got := sub.offer(*st.offer, "test"); got != st.accepted {
				t.Fatalf("%s: offer accepted %v, want %v", st.name, got, st.accepted)
			}
		}
		snap := sub.Snapshot()
		if got := sub.Multiplier("free"); got != st.free {
			t.Errorf("%s: free %v, want %v", st.name, got, st.free)
		}
		if got := sub.Multiplier("unknown"); got != 1 {
			t.Errorf("%s: unknown tier %v, want 1", st.name, got)
		}
		wantAge := time.Duration(0) // OriginNone
		if !math.IsInf(st.age, 1) {
			wantAge = time.Duration(math.Round(st.age*1000)) * time.Millisecond
		}
		if snap.Origin != st.origin || snap.Epoch != st.epoch || snap.Age != wantAge {
			t.Errorf("%s: snapshot %v epoch %d age %v, want %v epoch %d age %v", st.name, snap.Origin, snap.Epoch, snap.Age, st.origin, st.epoch, wantAge)
		}
		if got := mtAge(t, reg); !(got == st.age || math.Abs(got-st.age) < 1e-9) {
			t.Errorf("%s: throttled_multiplier_age_seconds %v, want %v", st.name, got, st.age)
		}
	}
	// Snapshot hands out a copy.
	sub.Snapshot().Tiers["free"] = 0.01
	if sub.Snapshot().Tiers["free"] != 0.7 {
		t.Fatal("Snapshot shares its map with the subscriber")
	}
}

func TestSubscriberOriginString(t *testing.T) {
	got := fmt.Sprint(OriginNone, OriginRedis, OriginStale, Origin(7))
	if want := "none redis stale Origin(7)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestSubscriberMetricRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewSubscriber(nil, Settings{}, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSubscriber(nil, Settings{}, reg); err == nil {
		t.Fatal("a second subscriber registered the same gauge on the same registry")
	}
}

// Readers never see a torn or older state while writers offer sets.
func TestSubscriberConcurrentReads(t *testing.T) {
	clock := &mtClock{}
	clock.Set(mt0)
	sub, err := NewSubscriber(nil, Settings{Now: clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const epochs = 200
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Go(func() {
			for e := uint64(1); e <= epochs; e++ {
				// free and premium always move together: free = premium / 2.
				sub.offer(mtSet(e, mt0, map[string]float64{"premium": 1 / float64(e), "free": 0.5 / float64(e)}), "test")
			}
		})
	}
	for r := 0; r < 4; r++ {
		wg.Go(func() {
			last := uint64(0)
			for i := 0; i < 2000; i++ {
				snap := sub.Snapshot()
				if snap.Epoch < last {
					t.Errorf("epoch went back from %d to %d", last, snap.Epoch)
					return
				}
				last = snap.Epoch
				if snap.Origin == OriginRedis && snap.Tiers["free"] != snap.Tiers["premium"]/2 {
					t.Errorf("torn snapshot %v", snap.Tiers)
					return
				}
				_ = sub.Multiplier("free")
			}
		})
	}
	wg.Wait()
	if got := sub.Snapshot().Epoch; got != epochs {
		t.Fatalf("final epoch %d, want %d", got, epochs)
	}
}

// Messages of an older epoch, invalid sets and garbage on the channel are
// ignored; a later heartbeat marks that all of them were read.
func TestSubscriberIgnoresBadMessages(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	s := mtSettings(Settings{PollInterval: time.Hour})
	p := mtPublisher(t, c, s)
	now := time.Now().Truncate(time.Millisecond)
	mtPublish(t, p, mtSet(5, now, map[string]float64{"free": 0.5}))
	sub := mtRun(t, c, s)
	mtWait(t, 10*time.Second, "subscribed with epoch 5", func() bool {
		snap := sub.Snapshot()
		return snap.Subscribed && snap.Epoch == 5
	})
	ms := now.UnixMilli()
	for _, payload := range []string{
		fmt.Sprintf(`{"epoch":4,"at":%d,"tiers":{"free":0.1}}`, ms+1),
		fmt.Sprintf(`{"epoch":9,"at":%d,"tiers":{"free":2}}`, ms+1),
		`not json`,
		`{"epoch":9,"tiers":{"free":0.3}}`, // no at
		fmt.Sprintf(`{"epoch":5,"at":%d,"tiers":{"free":0.5}}`, ms+2), // the marker
	} {
		if err := c.Publish(ctx, p.Key(), payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mtWait(t, 5*time.Second, "the heartbeat", func() bool { return sub.Snapshot().At.Equal(now.Add(2 * time.Millisecond)) })
	if got, snap := sub.Multiplier("free"), sub.Snapshot(); got != 0.5 || snap.Epoch != 5 {
		t.Fatalf("free %v at epoch %d, want 0.5 at epoch 5", got, snap.Epoch)
	}
}

// Redis killed and restarted on its port: the subscriber keeps applying
// what it had (it is fresh), re-subscribes and takes new values. The poll
// interval of an hour leaves recovery to the re-subscription (and the poll
// it triggers).
func TestSubscriberSurvivesRedisRestart(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	s := mtSettings(Settings{PollInterval: time.Hour})
	p := mtPublisher(t, c, s)
	mtPublish(t, p, mtSet(1, time.Now(), map[string]float64{"free": 0.5}))
	sub := mtRun(t, c, s)
	mtWait(t, 10*time.Second, "subscribed with epoch 1", func() bool {
		snap := sub.Snapshot()
		return snap.Subscribed && snap.Epoch == 1
	})
	r.Kill()
	mtWait(t, 10*time.Second, "the subscription noticed the outage", func() bool { return !sub.Snapshot().Subscribed })
	if got := sub.Multiplier("free"); got != 0.5 {
		t.Fatalf("during the outage free = %v, want the last value 0.5", got)
	}
	r.Start()
	mtWait(t, 10*time.Second, "re-subscribed", func() bool { return sub.Snapshot().Subscribed })
	// The restarted server is empty; the controller publishes on.
	mtWait(t, 10*time.Second, "publish after the restart", func() bool {
		return p.Publish(context.Background(), mtSet(2, time.Now(), map[string]float64{"free": 0.25})) == nil
	})
	mtWait(t, 5*time.Second, "epoch 2 after the restart", func() bool { return sub.Multiplier("free") == 0.25 })
	mtPublish(t, p, mtSet(3, time.Now(), map[string]float64{"free": 0.125}))
	mtWait(t, 5*time.Second, "epoch 3 through pub/sub", func() bool { return sub.Multiplier("free") == 0.125 })
}

func BenchmarkSubscriberMultiplier(b *testing.B) {
	sub, err := NewSubscriber(nil, Settings{StaleAfter: 24 * time.Hour}, nil)
	if err != nil {
		b.Fatal(err)
	}
	tiers := map[string]float64{"premium": 1, "standard": 0.7, "free": 0.25}
	sub.offer(mtSet(1, time.Now(), tiers), "bench") // fresh for the whole run
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if sub.Multiplier("free") != 0.25 {
				b.Fatal("wrong multiplier")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if sub.Multiplier("free") != 0.25 {
					b.Error("wrong multiplier")
					return
				}
			}
		})
	})
}

// Every subscriber exports the staleness it applies, so that the
// MultipliersStale alert follows controller.stale_after.
func TestSubscriberExportsStaleAfter(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewSubscriber(nil, Settings{StaleAfter: 7 * time.Second}, reg); err != nil {
		t.Fatal(err)
	}
	want := "# HELP throttled_multiplier_stale_after_seconds Age beyond which this instance treats the multipliers as stale (1): controller.stale_after.\n" +
		"# TYPE throttled_multiplier_stale_after_seconds gauge\nthrottled_multiplier_stale_after_seconds 7\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_multiplier_stale_after_seconds"); err != nil {
		t.Fatal(err)
	}
}
