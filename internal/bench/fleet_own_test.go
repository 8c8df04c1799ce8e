package bench

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// TestOwnSamplerReadsEveryLiveInstancesEffectiveMultipliers: the sampler
// reads throttled_effective_multiplier of each live member from its own
// registry, by the member's position, and leaves out members gone or
// without the gauge.
func TestOwnSamplerReadsEveryLiveInstancesEffectiveMultipliers(t *testing.T) {
	reg := func(eff ...instrument.Effective) *prometheus.Registry {
		r := prometheus.NewRegistry()
		if eff != nil {
			r.MustRegister(instrument.NewEffectiveMultipliers(func() []instrument.Effective { return eff }))
		}
		return r
	}
	f := &Fleet{members: []*member{
		{live: true, reg: reg(instrument.Effective{Tier: "free", Multiplier: 0.25, Source: "controller"},
			instrument.Effective{Tier: "premium", Multiplier: 1, Source: "controller"})},
		{live: false, reg: reg(instrument.Effective{Tier: "free", Multiplier: 0.5, Source: "controller"})},
		{live: true, reg: reg(instrument.Effective{Tier: "free", Multiplier: 1, Source: "none"})},
		{live: true, reg: reg()},
	}}
	got := newOwnSampler(f).read()
	want := map[string]map[string]float64{"0": {"free": 0.25, "premium": 1}, "2": {"free": 1}}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("read %v, want %v", got, want)
	}
}
