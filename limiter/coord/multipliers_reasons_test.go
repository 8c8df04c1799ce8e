package coord

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestMultiplierReasonsTravel: why each tier last moved and since when
// travel with the multipliers through the hash (Load, the poll) and
// through pub/sub, so an enforcer that does not lead can tell them; a set
// without them (an older controller) leaves none behind.
func TestMultiplierReasonsTravel(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	s := mtSettings(Settings{PollInterval: time.Hour})
	p := mtPublisher(t, c, s)
	since := mt0.Add(1500 * time.Millisecond)
	m := mtSet(1, time.Now(), map[string]float64{"free": 0.5, "premium": 1})
	m.Reasons = map[string]string{"free": "decrease: latency 0.82s > target 0.25s"}
	m.Since = map[string]time.Time{"free": since}
	mtPublish(t, p, m)
	got, found, err := p.Load(ctx)
	if err != nil || !found || got.Reasons["free"] != m.Reasons["free"] || !got.Since["free"].Equal(since) || len(got.Reasons) != 1 {
		t.Fatalf("Load = %+v, %v, %v; want free's reason and since only", got, found, err)
	}
	sub := mtRun(t, c, s)
	mtWait(t, 10*time.Second, "epoch 1 from the first poll", func() bool { return sub.Snapshot().Epoch == 1 })
	if snap := sub.Snapshot(); snap.Reasons["free"] != m.Reasons["free"] || !snap.Since["free"].Equal(since) {
		t.Fatalf("polled snapshot: reasons %v since %v", snap.Reasons, snap.Since)
	}
	m2 := mtSet(2, time.Now(), map[string]float64{"free": 0.25})
	m2.Reasons = map[string]string{"free": "decrease: error_ratio 0.2 > target 0.05"}
	m2.Since = map[string]time.Time{"free": since.Add(time.Second)}
	mtPublish(t, p, m2)
	mtWait(t, 2*time.Second, "epoch 2 through pub/sub", func() bool { return sub.Snapshot().Epoch == 2 })
	if snap := sub.Snapshot(); snap.Reasons["free"] != m2.Reasons["free"] || !snap.Since["free"].Equal(m2.Since["free"]) {
		t.Fatalf("pub/sub snapshot: reasons %v since %v", snap.Reasons, snap.Since)
	}
	mtPublish(t, p, mtSet(3, time.Now(), map[string]float64{"free": 1}))
	if got, _, _ := p.Load(ctx); got.Reasons != nil || got.Since != nil {
		t.Fatalf("after a set without reasons, Load has %v %v", got.Reasons, got.Since)
	}
}
