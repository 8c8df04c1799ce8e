package tokenlease_test

import (
	"testing"

	"golang.org/x/time/rate"
)

// BenchmarkXRateAllow: x/time/rate's Limiter.Allow on one limiter, the
// yardstick of BenchmarkLocalDecide (local decisions cost at most 1.5×).
func BenchmarkXRateAllow(b *testing.B) {
	l := rate.NewLimiter(rate.Limit(1e12), 1<<30)
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow() {
			b.Fatal("refused")
		}
	}
}
