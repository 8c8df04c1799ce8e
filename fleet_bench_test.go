package throttled

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
)

// BenchmarkLeaderFleetRead is the leader's share of a tick that grows with
// the fleet: reading the tally of n instances (each with two tiers'
// admitted counts and a saturation) into the in-process signals' families.
// cpu-ns/op is the leader process's CPU per tick (Redis's is apart):
// go test -run '^$' -bench LeaderFleetRead -benchtime 200x .
func BenchmarkLeaderFleetRead(b *testing.B) {
	r := testenv.StartRedis(b)
	for _, n := range []int{1, 3, 10, 30, 300} {
		b.Run("instances="+strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			prefix := "bench" + strconv.Itoa(n) + ":"
			var leader *coord.Tally
			for i := range n {
				tl, err := coord.NewTally(r.Client(), coord.TallySettings{ID: "i" + strconv.Itoa(i), Prefix: prefix, Window: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				if err := tl.Publish(ctx, map[string]float64{"admitted/free": float64(i), "admitted/premium": 1, saturationName: 0.1}); err != nil {
					b.Fatal(err)
				}
				leader = tl
			}
			g := fleetGatherer{local: prometheus.NewRegistry(), tally: leader, timeout: time.Second, fresh: time.Hour}
			cpu0 := overload.CPUTime()
			for b.Loop() {
				if _, err := g.Gather(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(overload.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op") // this process's: the leader's

		})
	}
}
