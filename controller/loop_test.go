package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// published formats what the fake publisher received: "tick:free@epoch".
func published(p *fakePublisher) string {
	var out []string
	for i, m := range p.published {
		out = append(out, formatPublish(p.ticks[i], m))
	}
	return strings.Join(out, " ")
}

func formatPublish(tick int, m multiplier.Set) string {
	return fmt.Sprintf("%d:%g@%d", tick, m.Tiers["free"], m.Epoch)
}

func TestLoopLeaderPublishesEveryTick(t *testing.T) {
	h := newHarness(5)
	l := h.loop(t, nil)
	h.run(t, l)
	// Cuts at t0, t0+10 s, t0+20 s (cool-down 9 s); a heartbeat publish in between.
	if got, want := published(h.pub), "0:0.5@1 1:0.5@1 2:0.25@2 3:0.25@2 4:0.125@3"; got != want {
		t.Fatalf("published %q, want %q", got, want)
	}
	for i, m := range h.pub.published {
		if want := t0.Add(time.Duration(i) * 5 * time.Second); !m.At.Equal(want) || len(m.Tiers) != 3 {
			t.Fatalf("publish %d: at %v with %d tiers, want %v with 3", i, m.At, len(m.Tiers), want)
		}
	}
	if got, want := strings.Join(h.lease.calls, " "), "acquire renew renew renew renew release"; got != want {
		t.Fatalf("lease calls %q, want %q", got, want)
	}
	if h.lease.releaseCtx != nil {
		t.Fatalf("Release got a context that had ended: %v", h.lease.releaseCtx)
	}
	if l.Leader() {
		t.Fatal("still leader after Run returned")
	}
}

func TestLoopFollowerNeverPublishesButShadows(t *testing.T) {
	h := newHarness(3)
	h.lease.acquire = always(false, nil)
	l := h.loop(t, nil)
	h.run(t, l)
	if len(h.pub.published) != 0 {
		t.Fatalf("follower published %q", published(h.pub))
	}
	if got, want := strings.Join(h.lease.calls, " "), "acquire acquire acquire"; got != want {
		t.Fatalf("lease calls %q, want %q (no release without the lease)", got, want)
	}
	if got := l.State().String(); got != "premium=1.00 standard=1.00 free=0.25 epoch=2" {
		t.Fatalf("shadow state %s", got)
	}
}

func TestLoopAcquireErrorIsNotLeadership(t *testing.T) {
	h := newHarness(2)
	h.lease.acquire = always(true, errFake)
	h.run(t, h.loop(t, nil))
	if len(h.pub.published) != 0 || slices.Contains(h.lease.calls, "release") {
		t.Fatalf("published %q, lease calls %v", published(h.pub), h.lease.calls)
	}
}

func TestLoopLosingTheLeaseStopsPublishingAtOnce(t *testing.T) {
	for _, lost := range []struct {
		name string
		ok   bool
		err  error
	}{{"renew false", false, nil}, {"renew error", true, errFake}, {"renew false and error", false, errFake}} {
		t.Run(lost.name, func(t *testing.T) {
			h := newHarness(7)
			h.lease.renew = func(tick int) (bool, error) {
				if tick == 2 {
					return lost.ok, lost.err
				}
				return true, nil
			}
			h.lease.acquire = func(tick int) (bool, error) { return tick == 0 || tick >= 4, nil }
			l := h.loop(t, nil)
			h.run(t, l)
			// Tick 2 loses the lease: no publish from it on, until tick 4 acquires again.
			if got, want := published(h.pub), "0:0.5@1 1:0.5@1 4:0.125@3 5:0.125@3 6:0.1@4"; got != want {
				t.Fatalf("published %q, want %q", got, want)
			}
			want := "acquire renew renew acquire acquire renew renew release"
			if got := strings.Join(h.lease.calls, " "); got != want {
				t.Fatalf("lease calls %q, want %q", got, want)
			}
		})
	}
}

func TestLoopShutdownDuringRenewStillReleases(t *testing.T) {
	h := newHarness(10)
	h.lease.renew = func(tick int) (bool, error) {
		if tick == 1 {
			h.clock.cancel()
			return false, context.Canceled
		}
		return true, nil
	}
	h.run(t, h.loop(t, nil))
	if got, want := strings.Join(h.lease.calls, " "), "acquire renew release"; got != want {
		t.Fatalf("lease calls %q, want %q", got, want)
	}
	if got := published(h.pub); got != "0:0.5@1" {
		t.Fatalf("published %q after the shutdown began", got)
	}
}

func TestLoopRunReturnsReleaseError(t *testing.T) {
	h := newHarness(1)
	h.lease.releaseErr = errFake
	err := h.loop(t, nil).Run(h.ctx)
	if !errors.Is(err, errFake) || !strings.HasPrefix(err.Error(), "controller: releasing the leader lease") {
		t.Fatalf("Run = %v, want the release error", err)
	}
}

func TestLoopRunOnEndedContextDoesNothing(t *testing.T) {
	h := newHarness(1)
	h.clock.cancel()
	h.run(t, h.loop(t, nil))
	if len(h.lease.calls) != 0 || len(h.pub.published) != 0 {
		t.Fatalf("lease calls %v, publishes %d", h.lease.calls, len(h.pub.published))
	}
}

func TestLoopSourceErrorHoldsAndStillPublishes(t *testing.T) {
	h := newHarness(3)
	h.src.read = func(tick int, now time.Time) (Input, error) {
		if tick == 0 {
			return latency(2, now.Sub(t0)), nil
		}
		return latency(2, now.Sub(t0)), errFake // the input that came with an error is ignored
	}
	h.run(t, h.loop(t, nil))
	if got, want := published(h.pub), "0:0.5@1 1:0.5@1 2:0.5@1"; got != want {
		t.Fatalf("published %q, want %q (hold, heartbeat)", got, want)
	}
}

func TestLoopPublishErrorKeepsStepping(t *testing.T) {
	h := newHarness(3)
	h.pub.err = errFake
	l := h.loop(t, nil)
	h.run(t, l)
	if len(h.pub.published) != 3 || l.State().Epoch != 2 {
		t.Fatalf("publishes %d, epoch %d", len(h.pub.published), l.State().Epoch)
	}
}

func TestLoopJitter(t *testing.T) {
	h := newHarness(4)
	draws := []float64{0, 0.5, 0.75, math.Nextafter(1, 0)}
	h.run(t, h.loop(t, nil, WithRand(func() float64 {
		r := draws[0]
		draws = draws[1:]
		return r
	})))
	want := []time.Duration{4500 * time.Millisecond, 5 * time.Second, 5250 * time.Millisecond}
	got := h.clock.sleeps
	if !slices.Equal(got[:3], want) {
		t.Fatalf("sleeps %v, want %v", got, want)
	}
	if got[3] <= 5499*time.Millisecond || got[3] > 5500*time.Millisecond {
		t.Fatalf("largest draw slept %v, want just under 5.5 s", got[3])
	}
}

func TestNewLoopRefusesMissingParts(t *testing.T) {
	h := newHarness(1)
	law := mustLaw(t, threeTiers())
	cases := []struct {
		name string
		call func() (*Loop, error)
	}{
		{"law", func() (*Loop, error) { return NewLoop(nil, h.src, h.pub, h.lease, nil) }},
		{"source", func() (*Loop, error) { return NewLoop(law, nil, h.pub, h.lease, nil) }},
		{"publisher", func() (*Loop, error) { return NewLoop(law, h.src, nil, h.lease, nil) }},
		{"lease", func() (*Loop, error) { return NewLoop(law, h.src, h.pub, nil, nil) }},
	}
	for _, c := range cases {
		if _, err := c.call(); !errors.Is(err, ErrMissingDependency) || !strings.Contains(err.Error(), c.name+" is nil") {
			t.Errorf("nil %s: %v", c.name, err)
		}
	}
	if _, err := NewLoop(law, h.src, h.pub, h.lease, nil); err != nil {
		t.Errorf("nil registerer refused: %v", err)
	}
}

func TestLoopStateAndLeaderAreSafeDuringRun(t *testing.T) {
	h := newHarness(50)
	l := h.loop(t, nil)
	done := make(chan error)
	go func() { done <- l.Run(h.ctx) }()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if l.State().Epoch == 0 {
				t.Fatal("loop never stepped")
			}
			return
		default:
			st := l.State()
			if len(st.Tiers) > 0 {
				st.Tiers[0].Multiplier = -1 // a caller's copy: must not reach the loop
			}
			_ = l.Leader()
		}
	}
}

// TestLoopSetLawAddsTier: a tier added at runtime (a new law) is stepped and
// published from the next tick, and the other tiers keep their state.
func TestLoopSetLawAddsTier(t *testing.T) {
	h := newHarness(3)
	var l *Loop
	read := h.src.read
	h.src.read = func(tick int, now time.Time) (Input, error) {
		if tick == 2 {
			tiers := append(threeTiers().Tiers, Tier{Name: "gold", Priority: 0})
			if err := l.SetLaw(mustLaw(t, Settings{Tiers: tiers})); err != nil {
				t.Error(err)
			}
		}
		return read(tick, now)
	}
	l = h.loop(t, nil)
	if err := l.SetLaw(nil); err == nil {
		t.Fatal("nil law accepted")
	}
	h.run(t, l)
	pub := h.pub.published
	if len(pub) != 3 || len(pub[1].Tiers) != 3 || len(pub[2].Tiers) != 4 || pub[2].Tiers["gold"] != 1 {
		t.Fatalf("published %v, want gold (at 1) from the third tick on", pub)
	}
	if pub[2].Tiers["free"] > pub[1].Tiers["free"] {
		t.Fatalf("free went from %v to %v across SetLaw under overload: state was lost", pub[1].Tiers["free"], pub[2].Tiers["free"])
	}
}
