package enforce_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// rates is a fixed RateSource for tests.
type rates map[string]float64

func (r rates) Rate(tier string) float64 { return r[tier] }

// TestTierAdmissionBoundsACrowd: 2,000 free clients, each far under its own
// quota, arrive in one second while the controller caps the free tier at
// 100 req/s. Per-key multipliers alone would admit them all; the tier-wide
// bucket admits its burst (10) at once and then 100 per second, refuses
// the rest with 503 shed naming the tier_admission rule, leaves each
// refused client's quota spent (a refusal for load gives no quota back)
// and leaves premium alone.
func TestTierAdmissionBoundsACrowd(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		now := t0
		e, err := enforce.New(store, perKeyPolicy(), enforce.Settings{
			Identifier: apiKeyIdentifier{},
			Tiers:      assignments{"pat": "premium"},
			Rates:      rates{"free": 100},
			Now:        func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(e)
		codes, start, refused := map[int]int{}, time.Now(), ""
		for i := range 2000 {
			key := fmt.Sprintf("crowd-%d", i)
			w := get(t, h, "/x", "X-API-Key", key)
			codes[w.Code]++
			if w.Code == http.StatusServiceUnavailable {
				refused = key
				if r := refusal(t, w); r.Reason != "shed" || r.Rule != enforce.TierAdmissionRule || r.Tier != "free" {
					t.Fatalf("refusal %+v, want shed by %s for free", r, enforce.TierAdmissionRule)
				}
			}
		}
		// The loop takes real time on Redis (TIME): allow what refilled.
		refilled := int(100*time.Since(start).Seconds()) + 1
		if ok := codes[200]; ok < 10 || ok > 10+refilled || codes[503] != 2000-ok || codes[429] != 0 {
			t.Fatalf("codes %v: want the burst of 10 (plus refill) admitted, the rest 503, no 429", codes)
		}
		if w := get(t, h, "/x", "X-API-Key", "pat"); w.Code != 200 {
			t.Fatalf("premium under a free cap: %d, want 200", w.Code)
		}
		// A refused client spent its quota as an admitted one did: 2 of 3 left.
		for key, want := range map[string]int64{refused: 2, "crowd-0": 2} {
			b, err := e.Inspect(context.Background(), key)
			if err != nil || len(b) != 1 || b[0].Remaining != want {
				t.Fatalf("%s's bucket after the crowd: %+v, %v; want %d remaining", key, b, err, want)
			}
		}
	})
}
