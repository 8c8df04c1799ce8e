package bench

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// TestOwnSamplerCountsEachLiveInstancesRefusals: a sample holds, for each
// live member by its position, every request its
// throttled_requests_total counted, those refused for quota and those
// refused for load (shed, tier cap, gate) and those of the premium tier;
// a gone member is left out.
func TestOwnSamplerCountsEachLiveInstancesRefusals(t *testing.T) {
	newMember := func(live bool, counts map[string]int) *member {
		reg := prometheus.NewRegistry()
		rq, err := instrument.NewRequests(reg)
		if err != nil {
			t.Fatal(err)
		}
		for reason, n := range counts {
			for range n {
				rq.Count("free", 200, reason)
			}
			if reason == instrument.ReasonAdmitted {
				rq.Count("premium", 200, reason)
			}
		}
		return &member{live: live, reg: reg}
	}
	f := &Fleet{members: []*member{
		newMember(true, map[string]int{instrument.ReasonAdmitted: 5, instrument.ReasonOverQuota: 2,
			instrument.ReasonShed: 3, instrument.ReasonTierCap: 1, instrument.ReasonConcurrency: 4,
			instrument.ReasonUpstreamError: 1}),
		newMember(false, map[string]int{instrument.ReasonShed: 9}),
		newMember(true, map[string]int{instrument.ReasonAdmitted: 7}),
	}}
	o := newOwnSampler(f)
	o.begin(time.Now())
	o.sample()
	want := map[string]overload.InstanceCounts{
		"0": {Received: 17, OverQuota: 2, ForLoad: 8, Gated: 4, Premium: 1},
		"2": {Received: 8, Premium: 1},
	}
	if len(o.samples) != 1 || !maps.Equal(o.samples[0].Counts, want) {
		t.Fatalf("samples %+v, want one of %v", o.samples, want)
	}
}
