package throttled

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/signals"
)

// An instance killed in an overload leaves its last saturation in the
// tally (0.9 at t0); the leader's saturation, read at t0+3s while b
// publishes 0.1, is b's alone: a dead instance's reading is not the
// fleet's now. Before the fix the leader read 0.9 for the tally's whole
// window (10 s): bench overload --scenario fleet kept cutting the free
// tier for 6 s after the surge, then capped premium.
func TestFleetSaturationLeavesOutSilentInstances(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	tally := func(id string) *coord.Tally {
		tl, err := coord.NewTally(r.Client(), coord.TallySettings{ID: id, Prefix: "fleet3:", Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	dead, live := tally("dead"), tally("live")
	if err := dead.Publish(ctx, map[string]float64{"admitted/free": 50, saturationName: 0.9}); err != nil {
		t.Fatal(err)
	}
	clock.Set(time.Unix(1_700_000_003, 0))
	if err := live.Publish(ctx, map[string]float64{"admitted/free": 20, saturationName: 0.1}); err != nil {
		t.Fatal(err)
	}
	mfs, err := fleetGatherer{local: prometheus.NewRegistry(), tally: live, timeout: time.Second, fresh: time.Second}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sats, admitted []float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case controller.SaturationMetric:
				sats = append(sats, m.GetGauge().GetValue())
			case signals.DefaultAdmittedCounter:
				admitted = append(admitted, m.GetCounter().GetValue())
			}
		}
	}
	if len(sats) != 1 || sats[0] != 0.1 {
		t.Errorf("saturation series %v, want live's [0.1] alone (dead's 0.9 is 3 s old)", sats)
	}
	if len(admitted) != 2 {
		t.Errorf("admitted series %v, want both instances' (a frozen counter adds nothing to a rate; dropping it would)", admitted)
	}
}

// An instance that stops (a scale-down) takes its counts out of the tally
// as it goes, as its heartbeat does: the leader does not read its last
// saturation until the tally's window drops it.
func TestStoppedInstanceLeavesTheTally(t *testing.T) {
	r := testenv.StartRedis(t)
	reg := prometheus.NewRegistry()
	sat := prometheus.NewGauge(prometheus.GaugeOpts{Name: controller.SaturationMetric})
	reg.MustRegister(sat)
	sat.Set(0.8)
	tl, err := coord.NewTally(r.Client(), coord.TallySettings{ID: "leaver", Prefix: "fleet4:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- publishAdmitted(ctx, reg, tl, 20*time.Millisecond) }()
	testenv.WaitFor(t, 10*time.Second, "the leaver's first publish", func() bool {
		got, err := tl.Read(context.Background())
		return err == nil && got["leaver"] != nil
	})
	cancel()
	<-done
	got, err := tl.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got["leaver"] != nil {
		t.Errorf("after the leaver stopped the tally still holds %v", got["leaver"])
	}
}

// A Redis that stalls for longer than the publish interval (a loaded host,
// a slow command) costs the tally publisher no connection: before, each
// publish was bounded by the interval, and go-redis closes a connection
// whose command outlived its context, so every tick of a 300 ms stall
// dialed anew (HELLO, CLIENT SETINFO: the "hello" and "client" commands a
// 30-instance fleet sent at 2.8/s per instance on a loaded host).
func TestTallyPublisherKeepsItsConnectionThroughAStall(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.DeadlineClient(0)
	tl, err := coord.NewTally(c, coord.TallySettings{ID: "slow", Prefix: "fleet5:"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- publishAdmitted(ctx, reg, tl, 20*time.Millisecond) }()
	info := r.Client()
	testenv.WaitFor(t, 10*time.Second, "the first publish", func() bool {
		return info.HLen(context.Background(), tl.Key()).Val() > 0
	})
	before := connections(t, info)
	r.Pause()
	time.Sleep(300 * time.Millisecond)
	r.Resume()
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	if n := connections(t, info) - before; n > 1 {
		t.Errorf("the publisher opened %d connections through a 300 ms stall (20 ms interval), want at most 1", n)
	}
}

func connections(t *testing.T, c *redis.Client) int {
	t.Helper()
	n, err := strconv.Atoi(testenv.Info(t, c, "stats")["total_connections_received"])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
