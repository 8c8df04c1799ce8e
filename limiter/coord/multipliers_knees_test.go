package coord

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestMultiplierKneesTravelToTheNextLeader: the level a tier was cut from
// and when travel in the published hash, so that a new leader's Load
// continues from them; a set without them leaves none behind.
func TestMultiplierKneesTravelToTheNextLeader(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	p := mtPublisher(t, c, mtSettings(Settings{PollInterval: time.Hour}))
	cut := mt0.Add(1500 * time.Millisecond)
	m := mtSet(1, time.Now(), map[string]float64{"free": 0.5, "premium": 1})
	m.Knees = map[string]float64{"free": 0.8}
	m.Cuts = map[string]time.Time{"free": cut}
	mtPublish(t, p, m)
	got, found, err := p.Load(ctx)
	if err != nil || !found || got.Knees["free"] != 0.8 || !got.Cuts["free"].Equal(cut) || len(got.Knees) != 1 || len(got.Cuts) != 1 {
		t.Fatalf("Load = knees %v cuts %v (found %v, err %v); want free's knee 0.8 cut at %v only", got.Knees, got.Cuts, found, err, cut)
	}
	mtPublish(t, p, mtSet(2, time.Now(), map[string]float64{"free": 1}))
	if got, _, _ := p.Load(ctx); got.Knees != nil || got.Cuts != nil {
		t.Fatalf("after a set without knees, Load has %v %v", got.Knees, got.Cuts)
	}
	bad := mtSet(3, time.Now(), map[string]float64{"free": 0.5})
	bad.Knees = map[string]float64{"free": 2}
	if err := p.Publish(ctx, bad); err == nil {
		t.Fatal("a knee above the largest multiplier was published")
	}
}
