package tokenlease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// meters are the algorithms that lease; at a multiplier ≥ 1 each refills
// its quota at Limit per Period up to Capacity.
var meters = []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket}

// TestLocalDecisionResetNotNow: decisions made from a lease say what an
// exact decision would: ResetAfter is when the key's quota is whole again
// (the unspent leased tokens count as the key's), Remaining counts the
// refill since the lease and never more than the capacity. They used to
// say ResetAfter 0 (headers: t=0, reset now) and Remaining as it was when
// the lease was taken. A refund, decided exactly, counts in the next.
func TestLocalDecisionResetNotNow(t *testing.T) {
	ms := time.Millisecond
	for _, alg := range meters {
		r := rule // 10/s, burst 10: a token per 100 ms
		r.Algorithm = alg
		clock := fakeclock.New(t0)
		shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
		s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 4, Now: clock.Now})
		for _, st := range []struct {
			name      string
			at        time.Duration
			remaining int64
			reset     time.Duration
			shared    int64 // calls so far
		}{
			{"t0 exact: 9 tokens", 0, 9, 100 * ms, 1},
			{"t1 lease 4 with it: 9.1 - 1", 10 * ms, 8, 190 * ms, 2},
			{"t2 local: 8.1 + 0.1 - 1", 20 * ms, 7, 280 * ms, 2},
			{"t3 local", 20 * ms, 6, 380 * ms, 2},
			{"t4 local: refilled to the capacity, 10 - 1", 500 * ms, 9, 100 * ms, 2},
			{"t5 local, the lease's last token", 500 * ms, 8, 200 * ms, 2},
			{"t6 lease again: 8 + 0.1 - 1 (shared + lease: 8.1; t4 lost one)", 510 * ms, 7, 290 * ms, 3},
			{"t7 local", 510 * ms, 6, 390 * ms, 3},
			{"t8 refund: exact (shared 4.1 + 1)", 510 * ms, 5, 490 * ms, 4},
			{"t9 local: 7.1 - 1", 510 * ms, 6, 390 * ms, 4},
		} {
			clock.Set(t0.Add(st.at))
			req := limiter.Request{Key: "k", Rule: r, Refund: strings.HasPrefix(st.name, "t8")}
			d, err := s.Decide(context.Background(), req)
			if err != nil || !d.Allowed || d.Remaining != st.remaining || shared.n.Load() != st.shared ||
				d.ResetAfter != st.reset {
				t.Fatalf("%v, %s: %+v %v after %d shared calls, want remaining %d, reset %v after %d",
					alg, st.name, d, err, shared.n.Load(), st.remaining, st.reset, st.shared)
			}
		}
	}
}

// TestLocalResetNeverBeforeExact: over a sequence of decisions of one key
// (costs 1 and 2 at uneven instants, at about 5 of the 7 tokens a second,
// with quiet spells that refill the bucket, shedding multipliers and
// refunds, both decided exactly), a leasing store's local decisions never
// tell a client its quota is whole sooner, nor that it has more left, than
// a store deciding every request exactly says at the same instant. The
// sequence stays within the quota, so that both spend the same and so
// keep the same history. (The leasing store's exact decisions are the
// shared store's, which differ: it spent the leased tokens early; at a
// multiplier < 1 it may shed where the exact store admits: both spend.)
func TestLocalResetNeverBeforeExact(t *testing.T) {
	for _, alg := range meters {
		r := limiter.Rule{Name: "r", Algorithm: alg, Limit: 7, Period: time.Second, Burst: 12}
		clock := fakeclock.New(t0)
		exact := limiter.NewMemory(limiter.WithClock(clock.Now))
		shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
		s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 5, Now: clock.Now})
		at, locals := t0, 0
		for i := range 400 {
			at = at.Add(time.Duration(150+i*7919%97*3) * time.Millisecond)
			if i%50 == 49 {
				at = at.Add(900 * time.Millisecond) // refills the bucket; TTL may end too
			}
			clock.Set(at)
			req := limiter.Request{Key: "k", Rule: r, Cost: int64(1 + i%2)}
			switch {
			case i%13 == 12:
				req.Multiplier = 0.5 // exact: sheds spend quota
			case i%17 == 16:
				req.Refund = true // exact: gives the cost back
			}
			before := shared.n.Load()
			got, err := s.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			local := shared.n.Load() == before
			if local {
				locals++
			}
			want, _ := exact.Decide(context.Background(), req)
			over := got.Reason == limiter.OverQuota
			if over != (want.Reason == limiter.OverQuota) || local && (got.ResetAfter < want.ResetAfter || got.Remaining > want.Remaining) {
				t.Fatalf("%v, decision %d (cost %d, local %v): lease says %+v, exact %+v", alg, i, req.Cost, local, got, want)
			}
		}
		if locals < 200 {
			t.Fatalf("%v: %d of 400 decisions local, want ≥ 200", alg, locals)
		}
	}
}

// TestLocalDecisionCountsOthers: what other instances spent, as the
// shared store's answers here tell it, counts in the local decisions. At
// 7/s a token takes 142,857.14 µs: the shared store's ResetAfter, rounded
// up to the µs, does not carry into them (its Remaining is exact).
func TestLocalDecisionCountsOthers(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := limiter.NewMemory(limiter.WithClock(clock.Now))
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 2, Now: clock.Now})
	r := limiter.Rule{Name: "r", Limit: 7, Period: time.Second}
	if _, err := shared.Decide(context.Background(), limiter.Request{Key: "k", Rule: r, Cost: 3}); err != nil {
		t.Fatal(err) // another instance spent 3
	}
	for _, st := range []struct {
		name      string
		remaining int64
		reset     time.Duration // 4/7, 5/7, 6/7 and 7/7 s, rounded up to the µs
	}{
		{"t0 exact", 3, 571429 * time.Microsecond},
		{"t1 lease 2 with it: 0 in the shared store, 2 leased", 2, 714286 * time.Microsecond},
		{"t2 local", 1, 857143 * time.Microsecond},
		{"t3 local", 0, time.Second},
	} {
		d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r})
		if err != nil || !d.Allowed || d.Remaining != st.remaining || d.ResetAfter != st.reset {
			t.Fatalf("%s: %+v %v, want remaining %d, reset %v", st.name, d, err, st.remaining, st.reset)
		}
	}
}
