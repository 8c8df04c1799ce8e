package bulkhead

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

func (r *stressRun) gateOp(g *Gate, rng *rand.Rand) {
	ctx := context.Background()
	if rng.IntN(50) == 0 { // a context that may end while queued, racing a grant
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(50))*time.Microsecond)
		defer cancel()
	}
	p, err := g.Acquire(ctx, rng.IntN(4))
	switch {
	case errors.Is(err, ErrShed):
		r.refused.Add(1)
		return
	case err != nil:
		r.cancelled.Add(1)
		return
	}
	r.enter()
	if rng.IntN(4) == 0 {
		runtime.Gosched()
	}
	r.holders.Add(-1)
	if rng.IntN(2) == 0 {
		p.Discard()
	} else {
		p.Release()
	}
	if rng.IntN(8) == 0 {
		p.Release() // a second release must free nothing
	}
}

// gateResize moves the limit at random in [1, maxLimit] until stop closes,
// as stressRun.resize does for a Bulkhead.
func (r *stressRun) gateResize(t *testing.T, g *Gate, maxLimit int, stop <-chan struct{}) int {
	rng := rand.New(rand.NewPCG(3, 0))
	n := 0
	for {
		select {
		case <-stop:
			return n
		default:
		}
		l := 1 + rng.IntN(maxLimit)
		if int64(l) >= r.ceil.v.Load() {
			r.ceil.set(int64(l))
			g.SetLimit(l)
		} else {
			g.SetLimit(l)
			eventually(t, "holders under a shrunk limit", func() bool { return g.InFlight() <= l })
			r.ceil.set(int64(l))
		}
		n++
		_, _, _, _ = g.TakeWindow()
		time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
	}
}

// TestGateUnderLoadLeaksNoPermit: random acquires at random priorities
// (some cancelled; released, discarded, some twice) while the limit moves
// and the window is taken. No holder count ever exceeds the limit in force,
// and at the end nothing is held or queued and exactly maxLimit permits can
// be taken.
func TestGateUnderLoadLeaksNoPermit(t *testing.T) {
	const (
		ops      = 400_000
		workers  = 8
		maxLimit = 16
	)
	g := mustGate(t, GateSettings{Limit: maxLimit, MaxQueue: 4, MaxWait: 200 * time.Microsecond}, nil)
	r := &stressRun{}
	r.ceil.set(maxLimit)
	stop := make(chan struct{})
	resizes := make(chan int, 1)
	go func() { resizes <- r.gateResize(t, g, maxLimit, stop) }()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w)+200, 9))
			for range ops / workers {
				r.gateOp(g, rng)
			}
		})
	}
	wg.Wait()
	close(stop)
	n := <-resizes
	t.Logf("resizes %d, admitted %d, shed %d, cancelled %d, max holders %d",
		n, r.admitted.Load(), r.refused.Load(), r.cancelled.Load(), r.maxSeen.Load())
	if v := r.violations.Load(); v != 0 {
		t.Errorf("%d admissions above the limit in force", v)
	}
	if got := r.admitted.Load() + r.refused.Load() + r.cancelled.Load(); got != ops {
		t.Errorf("outcomes %d, want %d", got, ops)
	}
	if n == 0 || r.refused.Load() == 0 {
		t.Errorf("the run did not exercise resizing and shedding: %d resizes, %d shed", n, r.refused.Load())
	}
	if s := g.Stats(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("after the run: %+v, want nothing held or queued", s)
	}
	g.SetLimit(maxLimit)
	var ps []Permit
	for i := range maxLimit {
		p, err := g.Acquire(context.Background(), 0)
		if err != nil {
			t.Fatalf("permit %d of %d: %v", i+1, maxLimit, err)
		}
		ps = append(ps, p)
	}
	if _, err := g.Acquire(context.Background(), 0); !errors.Is(err, ErrShed) {
		t.Fatalf("permit %d of %d: err = %v, want ErrShed", maxLimit+1, maxLimit, err)
	}
	for _, p := range ps {
		p.Release()
	}
}
