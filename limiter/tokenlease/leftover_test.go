package tokenlease_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// charging counts the decisions that reach the shared store and the
// tokens they spent there; with yield, each decision lets other
// goroutines run first (a round trip in flight).
type charging struct {
	counting
	charged atomic.Int64
	yield   bool
}

func (c *charging) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if c.yield {
		runtime.Gosched()
	}
	d, err := c.counting.Decide(ctx, req)
	if err == nil && d.Allowed && !req.Refund && !req.Peek {
		c.charged.Add(max(req.Cost, 1))
	}
	return d, err
}

// TestRenewalChargesOnlyAdmittedOrHeld: a hot key sending requests of cost
// 2 under Size 3 renews its lease while it holds 1 token. Every token the
// shared store charged is admitted or still held here: charged − admitted
// stays within 0..Size, and equals the tokens the lease still spends
// locally at the end. The renewal used to replace the leftover token by
// the new batch: the shared store had charged it and nobody admitted it,
// one token lost per renewal while the key stayed hot.
func TestRenewalChargesOnlyAdmittedOrHeld(t *testing.T) {
	const size = 3
	r := limiter.Rule{Name: "r", Limit: 100, Period: time.Second, Burst: 100} // every lease granted
	clock := fakeclock.New(t0)
	shared := &charging{counting: counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: size, Now: clock.Now})
	ctx := context.Background()
	var admitted int64
	for i := range 30 { // t0, t0+5ms, …: 60 tokens in 150 ms, 7 renewals
		clock.Set(t0.Add(time.Duration(i) * 5 * time.Millisecond))
		d, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: r, Cost: 2})
		if err != nil || !d.Allowed {
			t.Fatalf("decision %d: %+v %v", i, d, err)
		}
		admitted += 2
		if held := shared.charged.Load() - admitted; held < 0 || held > size {
			t.Fatalf("decision %d: %d tokens charged, %d admitted: %d unaccounted, want 0..%d",
				i, shared.charged.Load(), admitted, held, size)
		}
	}
	charged := shared.charged.Load() // before drain's last decision leases
	if held := drain(t, s, &shared.counting, r); charged != admitted+held {
		t.Fatalf("%d tokens charged to the shared store, %d admitted, %d held: %d lost",
			charged, admitted, held, charged-admitted-held)
	}
}

// TestConcurrentRenewalsLoseNoToken: callers deciding for one key at once,
// at costs 1 to 3, with each shared decision letting the others run, so
// that renewals run while others spend locally or decide exactly: every
// token the shared store charged is admitted or still held.
func TestConcurrentRenewalsLoseNoToken(t *testing.T) {
	r := limiter.Rule{Name: "r", Limit: 1_000_000, Period: time.Second, Burst: 1_000_000} // every lease granted
	clock := fakeclock.New(t0)
	shared := &charging{counting: counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}, yield: true}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 5, Now: clock.Now})
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				cost := int64(1 + (g+i)%3)
				d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r, Cost: cost})
				if err != nil || !d.Allowed {
					t.Errorf("caller %d, decision %d: %+v %v", g, i, d, err)
					return
				}
				admitted.Add(cost)
			}
		})
	}
	wg.Wait()
	charged := shared.charged.Load() // before drain's last decision leases
	if held := drain(t, s, &shared.counting, r); charged != admitted.Load()+held {
		t.Fatalf("%d tokens charged to the shared store, %d admitted, %d held: %d lost",
			charged, admitted.Load(), held, charged-admitted.Load()-held)
	}
}

// drain spends what s's lease of key "k" still holds, 1 token at a time,
// until a decision reaches shared, and says how many it spent.
func drain(t *testing.T, s *tokenlease.Store, shared *counting, r limiter.Rule) int64 {
	t.Helper()
	calls, held := shared.n.Load(), int64(0)
	for {
		if d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r}); err != nil || !d.Allowed {
			t.Fatalf("draining the lease: %+v %v", d, err)
		}
		if shared.n.Load() != calls {
			return held
		}
		held++
	}
}

// TestRefusedRenewalSpendsLeftover: at one instant, a key sending
// requests of cost 2 under Size 3 is admitted the whole bucket, the token
// a lease still holds paying for part of a request whose renewal the
// shared store refuses (only the rest is decided there), and a token held
// when the rest is refused too stays in the lease. Such a request used to
// be decided for its whole cost in the shared store, refused while the
// shared store and the lease held 1 token each (burst 10: 8 admitted);
// and decisions reported the shared store's Remaining without the held
// token.
func TestRefusedRenewalSpendsLeftover(t *testing.T) {
	type step struct {
		cost      int64
		allowed   bool
		remaining int64
		shared    int64 // calls so far
	}
	for _, tc := range []struct {
		burst int64
		steps []step
	}{
		{10, []step{
			{2, true, 8, 1},  // t0 exact: 8 in the shared store
			{2, true, 6, 2},  // t1 lease 3 with it: 3 shared, 3 held
			{2, true, 4, 2},  // t2 local: 1 held
			{2, true, 2, 4},  // t3 held 1 + 1: lease 1 + 3 refused, 1 exact
			{2, true, 0, 6},  // t4 lease 2 + 3 refused, 2 exact
			{2, false, 0, 8}, // t5 nothing left
		}},
		{11, []step{
			{2, true, 9, 1},  // t0 exact
			{2, true, 7, 2},  // t1 lease 3 with it: 4 shared, 3 held
			{2, true, 5, 2},  // t2 local: 1 held
			{2, true, 3, 3},  // t3 held 1 + 1: lease 1 + 3 granted, 3 held
			{2, true, 1, 3},  // t4 local: 1 held
			{2, false, 1, 5}, // t5 held 1 + 1: lease refused, 1 exact refused: 1 held still
			{1, true, 0, 5},  // t6 local: the held token
		}},
	} {
		r := limiter.Rule{Name: "r", Limit: 10, Period: time.Second, Burst: tc.burst}
		clock := fakeclock.New(t0)
		shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
		s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 3, Now: clock.Now})
		for i, st := range tc.steps {
			d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r, Cost: st.cost})
			if err != nil || d.Allowed != st.allowed || d.Remaining != st.remaining || shared.n.Load() != st.shared {
				t.Fatalf("burst %d, t%d: %+v %v after %d shared calls, want allowed %v remaining %d after %d",
					tc.burst, i, d, err, shared.n.Load(), st.allowed, st.remaining, st.shared)
			}
		}
	}
}

// TestOverAdmissionBound: N instances on one shared store, with costs 1
// to 3, so that leases run short holding tokens, which renewals keep: over
// every window the instances admit at most
// burst + rate × window + N × Size tokens (an instance holds at most Size:
// a renewal leases only what brings its tokens back to Size). Every
// 100 ms, a step asks more than the bucket and the leases hold, and 40 ms
// later a step leases and spends part of it, so that the bucket is whole
// again while the leases hold tokens: some window admits more than
// burst + rate × window (leases spent early).
func TestOverAdmissionBound(t *testing.T) {
	const n, size, steps = 3, 8, 2000 // 1 ms steps, a token per step
	r := limiter.Rule{Name: "b", Limit: 1000, Period: time.Second, Burst: 50}
	clock := fakeclock.New(t0)
	shared := limiter.NewMemory(limiter.WithClock(clock.Now))
	var inst [n]*tokenlease.Store
	for i := range inst {
		inst[i], _ = tokenlease.New(shared, tokenlease.Settings{Size: size, Now: clock.Now})
	}
	admitted := make([]int64, steps+1) // admitted[i]: tokens admitted in steps before i
	for i := range steps {
		clock.Set(t0.Add(time.Duration(i) * time.Millisecond))
		reqs := 0
		switch i % 100 {
		case 0: // more than the bucket and the leases hold
			reqs = 12 * n
		case 40: // leases granted, spent in part
			reqs = 2 * n
		}
		for j := range reqs {
			cost := int64(1 + (i+j)%3)
			d, err := inst[j%n].Decide(context.Background(), limiter.Request{Key: "k", Rule: r, Cost: cost})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted[i+1] += cost
			}
		}
		admitted[i+1] += admitted[i]
	}
	worst := int64(0)
	for i := 0; i < steps; i++ {
		for j := i + 1; j <= steps; j++ {
			rated := r.Burst + int64(j-i-1) // tokens refilled between the first and last step, and the burst
			got := admitted[j] - admitted[i]
			if got > rated+n*size {
				t.Fatalf("steps [%d, %d): %d tokens admitted, bound %d", i, j, got, rated+n*size)
			}
			worst = max(worst, got-rated)
		}
	}
	t.Logf("worst %d", worst)
	if worst <= 0 { // leases did move admissions ahead, or the test proves nothing
		t.Fatalf("no window above burst + rate × window: leases never spent early")
	}
}
