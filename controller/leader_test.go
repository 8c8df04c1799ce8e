package controller

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// all formats every multiplier of a publish: "tick:premium/standard/free@epoch".
func all(p *fakePublisher) string {
	var out []string
	for i, m := range p.published {
		out = append(out, fmt.Sprintf("%d:%g/%g/%g@%d", p.ticks[i], m.Tiers["premium"], m.Tiers["standard"], m.Tiers["free"], m.Epoch))
	}
	return strings.Join(out, " ")
}

func band(_ int, now time.Time) (Input, error) { return latency(0.95, now.Sub(t0)), nil }

func loaded(epoch uint64, age time.Duration, premium, standard, free float64) func(int) (multiplier.Set, bool, error) {
	return func(int) (multiplier.Set, bool, error) {
		return multiplier.Set{Epoch: epoch, At: t0.Add(-age),
			Tiers: map[string]float64{"premium": premium, "standard": standard, "free": free}}, true, nil
	}
}

func TestLoopNewLeaderContinuesFromPublishedState(t *testing.T) {
	cases := []struct {
		name  string
		load  func(int) (multiplier.Set, bool, error)
		want  string
		loads []int
	}{
		{"fresh: same values and epoch", loaded(41, 5*time.Second, 1, 0.7, 0.1),
			"0:1/0.7/0.1@41 1:1/0.7/0.1@41", []int{0}},
		{"stale: shadow values, newer epoch", loaded(41, time.Hour, 1, 0.7, 0.1),
			"0:1/1/1@42 1:1/1/1@42", []int{0}},
		{"out of bounds: clamped, newer epoch", loaded(9, 0, 5, math.NaN(), 0.01),
			"0:1/1/0.1@10 1:1/1/0.1@10", []int{0}},
		{"nothing published yet", func(int) (multiplier.Set, bool, error) { return multiplier.Set{}, false, nil },
			"0:1/1/1@0 1:1/1/1@0", []int{0}},
		{"load fails once: no publish until it works", func(tick int) (multiplier.Set, bool, error) {
			if tick == 0 {
				return multiplier.Set{}, false, errFake
			}
			return loaded(41, 0, 1, 0.7, 0.1)(tick)
		}, "1:1/0.7/0.1@41", []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(2)
			h.src.read = band
			lp := &loadingPublisher{fakePublisher: h.pub, load: c.load}
			h.run(t, h.loop(t, lp))
			if got := all(h.pub); got != c.want {
				t.Fatalf("published %q, want %q", got, c.want)
			}
			if !slices.Equal(lp.loads, c.loads) {
				t.Fatalf("loads at ticks %v, want %v", lp.loads, c.loads)
			}
		})
	}
}

func TestLoopLoadsAgainOnEveryNewLeadership(t *testing.T) {
	h := newHarness(4)
	h.src.read = band
	h.lease.acquire = func(tick int) (bool, error) { return tick != 1, nil }
	h.lease.renew = func(tick int) (bool, error) { return tick != 1, nil }
	lp := &loadingPublisher{fakePublisher: h.pub, load: loaded(7, 0, 1, 1, 0.5)}
	h.run(t, h.loop(t, lp))
	if !slices.Equal(lp.loads, []int{0, 2}) {
		t.Fatalf("loads at ticks %v, want [0 2]", lp.loads)
	}
}

func TestLoopNewLeaderWithoutLoaderStartsFromShadow(t *testing.T) {
	h := newHarness(3)
	h.lease.acquire = func(tick int) (bool, error) { return tick == 2, nil }
	h.run(t, h.loop(t, nil))
	// As a follower it cut free at t0; its first publish continues from there
	// (second cut at t0+10 s) instead of restarting from the ceilings.
	if got, want := all(h.pub), "2:1/1/0.25@2"; got != want {
		t.Fatalf("published %q, want %q", got, want)
	}
}

func withRates(m multiplier.Set, r map[string]float64) multiplier.Set {
	m.Rates = r
	return m
}

func TestAdopt(t *testing.T) {
	law := mustLaw(t, threeTiers()) // hold timeout 30 s
	m := func(epoch uint64, age time.Duration, tiers map[string]float64) multiplier.Set {
		return multiplier.Set{Tiers: tiers, Epoch: epoch, At: t0.Add(-age)}
	}
	full := map[string]float64{"premium": 0.9, "standard": 0.5, "free": 0.1}
	cases := []struct {
		name string
		st   State
		m    multiplier.Set
		want string
	}{
		{"fresh", state(1, 1, 1), m(5, 30*s, full), "premium=0.90 standard=0.50 free=0.10 epoch=5"},
		{"fresh, own epoch higher", State{Epoch: 8}, m(5, 0, full), "premium=0.90 standard=0.50 free=0.10 epoch=8"},
		{"stale", state(1, 1, 0.5), m(5, 30*s+1, full), "premium=1.00 standard=1.00 free=0.50 epoch=6"},
		{"no timestamp is stale", state(1, 1, 0.5), multiplier.Set{Tiers: full, Epoch: 5}, "premium=1.00 standard=1.00 free=0.50 epoch=6"},
		{"missing tier keeps own", state(1, 0.7, 1), m(5, 0, map[string]float64{"premium": 0.9, "free": 0.1}),
			"premium=0.90 standard=0.70 free=0.10 epoch=6"},
		{"extra tier", state(), m(5, 0, map[string]float64{"premium": 1, "standard": 1, "free": 1, "old": 0.2}),
			"premium=1.00 standard=1.00 free=1.00 epoch=6"},
		{"fresh rate caps taken over", state(1, 1, 1), withRates(m(5, 0, full), map[string]float64{"free": 120, "standard": 300}),
			"premium=0.90 standard=0.50(300.0/s) free=0.10(120.0/s) epoch=5"},
		{"a cap on a tier at its ceiling is dropped", state(1, 1, 1),
			withRates(m(5, 0, map[string]float64{"premium": 1, "standard": 1, "free": 0.5}), map[string]float64{"premium": 50, "free": 80}),
			"premium=1.00 standard=1.00 free=0.50(80.0/s) epoch=6"},
		{"stale caps are ignored", state(1, 1, 0.5), withRates(m(5, 30*s+1, full), map[string]float64{"free": 120}),
			"premium=1.00 standard=1.00 free=0.50 epoch=6"},
	}
	for _, c := range cases {
		if got := law.Adopt(c.st, c.m, t0).String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// The leader publishes each capped tier's rate with the multipliers, and no
// rate for an uncapped tier.
func TestPublishedSetCarriesRates(t *testing.T) {
	st := State{Tiers: []TierState{{Name: "premium", Multiplier: 1}, {Name: "free", Multiplier: 0.5, Rate: 80}}, Epoch: 3, At: t0}
	m := st.multipliers()
	if len(m.Rates) != 1 || m.Rates["free"] != 80 || m.Tiers["free"] != 0.5 || m.Tiers["premium"] != 1 || m.Epoch != 3 {
		t.Fatalf("published %+v, want free at 0.5 capped at 80/s, premium at 1 uncapped, epoch 3", m)
	}
	if m := (State{Tiers: []TierState{{Name: "free", Multiplier: 1}}, At: t0}).multipliers(); m.Rates != nil {
		t.Fatalf("uncapped state published rates %v", m.Rates)
	}
}
