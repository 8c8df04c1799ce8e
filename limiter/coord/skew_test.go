// Staleness follows local receipt time, so controllers and enforcers whose
// clocks are skewed by ±30 s still apply fresh multipliers (it failed on
// the older rule, which compared the controller's At with the enforcer's
// clock).

package coord

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// TestStalenessUnderClockSkew: a controller whose clock is 30 s ahead
// publishes a cut; enforcers whose clocks are 30 s behind, exact and 30 s
// ahead apply it while the controller keeps publishing (a clock is not a
// reason to stop shedding), and all drop it (multiplier 1) once the
// controller has been silent for StaleAfter of their own time. Clocks are
// fake: each is real time plus its skew, frozen when the test says so.
func TestStalenessUnderClockSkew(t *testing.T) {
	r := testenv.StartRedis(t)
	const staleAfter = 15 * time.Second
	base := time.Now()
	pub, err := NewPublisher(r.Client(), Settings{Prefix: "skew:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	skews := []time.Duration{-30 * time.Second, 0, 30 * time.Second}
	clocks := make([]*mtClock, len(skews))
	subs := make([]*Subscriber, len(skews))
	for i, skew := range skews {
		clocks[i] = &mtClock{}
		clocks[i].Set(base.Add(skew))
		subs[i], err = NewSubscriber(r.Client(), Settings{Prefix: "skew:", StaleAfter: staleAfter,
			PollInterval: 10 * time.Millisecond, Now: clocks[i].Now}, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = subs[i].Run(ctx) }()
	}
	controllerAt := base.Add(30 * time.Second)
	m := multiplier.Set{Epoch: 1, At: controllerAt, Tiers: map[string]float64{"free": 0.5}}
	if err := pub.Publish(ctx, m); err != nil {
		t.Fatal(err)
	}
	// Every subscriber has read the set once its Snapshot shows epoch 1.
	deadline := time.Now().Add(5 * time.Second)
	for i := range subs {
		for subs[i].Snapshot().Epoch != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("subscriber skewed %v never read the published set", skews[i])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i, sub := range subs {
		if got := sub.Multiplier("free"); got != 0.5 {
			t.Errorf("enforcer skewed %v, controller +30s, just published: free multiplier %v, want 0.5 (%s)",
				skews[i], got, describe(sub))
		}
	}
	// The controller goes silent; each enforcer's own clock moves past
	// StaleAfter.
	for i := range clocks {
		clocks[i].Set(base.Add(skews[i]).Add(staleAfter + time.Second))
	}
	for i, sub := range subs {
		if got := sub.Multiplier("free"); got != 1 {
			t.Errorf("enforcer skewed %v, controller silent for StaleAfter+1s: free multiplier %v, want 1 (%s)",
				skews[i], got, describe(sub))
		}
	}
}

func describe(s *Subscriber) string {
	snap := s.Snapshot()
	return fmt.Sprintf("origin %s, age %v", snap.Origin, snap.Age)
}
