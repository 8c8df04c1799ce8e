package throttled

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// An enforcer that does not lead tells GET /v1/multipliers what the leader
// published: the source in throttled_effective_multiplier's words
// (controller, not redis), and why each tier last moved and since when.
func TestMultiplierStatusFromRedis(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	s := coord.Settings{Prefix: "status:", PollInterval: 50 * time.Millisecond}
	pub, err := coord.NewPublisher(c, s)
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	set := multiplier.Set{Tiers: map[string]float64{"free": 0.05, "premium": 1}, Epoch: 3, At: time.Now(),
		Reasons: map[string]string{"free": "decrease: latency 0.82s > target 0.25s"}, Since: map[string]time.Time{"free": since}}
	if err := pub.Publish(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	sub, err := coord.NewSubscriber(c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testenv.WaitFor(t, 10*time.Second, "the subscriber holds epoch 3", func() bool { return sub.Snapshot().Epoch == 3 })
	st := &multiplierStatus{tiers: func() []string { return []string{"premium", "free"} }, m: &pinned{src: sub, now: time.Now}}
	got := st.Multipliers()
	if len(got) != 2 || got[1].Tier != "free" {
		t.Fatalf("Multipliers() = %+v", got)
	}
	free := got[1]
	if free.Source != "controller" || free.Multiplier != 0.05 || free.Reason != set.Reasons["free"] || !free.Since.Equal(since) {
		t.Fatalf("free: %+v, want source controller, 0.05, the published reason and since %v", free, since)
	}
	if got[0].Reason != "" || !got[0].Since.IsZero() {
		t.Fatalf("premium never moved: %+v", got[0])
	}
}

// In one process (no Redis) the controller's own publication is told alike;
// before it, the source is none.
func TestMultiplierStatusLocal(t *testing.T) {
	local := &localMultipliers{}
	st := &multiplierStatus{tiers: func() []string { return []string{"free"} }, m: &pinned{src: local, now: time.Now}}
	if got := st.Multipliers(); got[0].Source != "none" || got[0].Multiplier != 1 {
		t.Fatalf("before any publication: %+v", got)
	}
	at := time.Now()
	_ = local.Publish(context.Background(), multiplier.Set{Tiers: map[string]float64{"free": 0.5}, Epoch: 1, At: at,
		Reasons: map[string]string{"free": "decrease: error_ratio 0.2 > target 0.05"}, Since: map[string]time.Time{"free": at}})
	if got := st.Multipliers()[0]; got.Source != "controller" || got.Multiplier != 0.5 || got.Reason == "" || !got.Since.Equal(at) || !got.UpdatedAt.Equal(at) {
		t.Fatalf("after a publication: %+v", got)
	}
}
