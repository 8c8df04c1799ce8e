package bulkhead

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ceiling is the limit the test holds the bulkhead to at each instant, read
// under a seqlock so a worker sees it unchanged around its own count.
type ceiling struct {
	seq atomic.Uint64 // odd while the resizer changes v
	v   atomic.Int64
}

func (c *ceiling) set(v int64) {
	c.seq.Add(1)
	c.v.Store(v)
	c.seq.Add(1)
}

// stressRun counts what the workers saw.
type stressRun struct {
	holders, maxSeen, violations atomic.Int64
	admitted, refused, cancelled atomic.Int64
	ceil                         ceiling
}

// enter counts a holder and checks it against the ceiling in force.
func (r *stressRun) enter() {
	s1 := r.ceil.seq.Load()
	h := r.holders.Add(1)
	c := r.ceil.v.Load()
	if s2 := r.ceil.seq.Load(); s1 == s2 && s1%2 == 0 && h > c {
		r.violations.Add(1)
	}
	for m := r.maxSeen.Load(); h > m && !r.maxSeen.CompareAndSwap(m, h); m = r.maxSeen.Load() {
	}
	r.admitted.Add(1)
}

func (r *stressRun) op(b *Bulkhead, rng *rand.Rand) {
	var (
		p   Permit
		err error
	)
	switch k := rng.IntN(100); {
	case k < 40:
		p, err = b.TryAcquire()
	case k < 98:
		p, err = b.Acquire(context.Background())
	default: // a context that may end while queued, racing a grant
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(50))*time.Microsecond)
		p, err = b.Acquire(ctx)
		cancel()
	}
	switch {
	case errors.Is(err, ErrFull):
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
	p.Release()
	if rng.IntN(8) == 0 {
		p.Release() // a second release must free nothing
	}
}

// resize moves the limit at random in [1, maxLimit] until stop closes. A
// grow raises the ceiling first; a shrink lowers it only once in-flight
// permits fit under it (the holders of older permits finish first).
func (r *stressRun) resize(t *testing.T, b *Bulkhead, maxLimit int, seed uint64, stop <-chan struct{}) int {
	rng := rand.New(rand.NewPCG(seed, 0))
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
			_ = b.Resize(l)
		} else {
			_ = b.Resize(l)
			eventually(t, "holders under a shrunk limit", func() bool { return b.InFlight() <= l })
			r.ceil.set(int64(l))
		}
		n++
		time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
	}
}

// TestResizeUnderLoadLeaksNoPermit: 10^6 random acquire/release operations
// (try, queued, cancelled; some released twice) across goroutines while the
// limit moves. No holder count ever exceeds the limit in force, and at the
// end nothing is held and exactly maxLimit permits can be taken.
func TestResizeUnderLoadLeaksNoPermit(t *testing.T) {
	const (
		ops      = 1_000_000
		workers  = 8
		maxLimit = 16
	)
	b := mustNew(t, "stress", Settings{Limit: maxLimit, MaxQueue: 4, MaxWait: 200 * time.Microsecond}, nil)
	r := &stressRun{}
	r.ceil.set(maxLimit)
	stop := make(chan struct{})
	resizes := make(chan int, 1)
	go func() { resizes <- r.resize(t, b, maxLimit, 1, stop) }()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+100, 7))
			for range ops / workers {
				r.op(b, rng)
			}
		}()
	}
	wg.Wait()
	close(stop)
	n := <-resizes
	t.Logf("resizes %d, admitted %d, refused %d, cancelled %d, max holders %d",
		n, r.admitted.Load(), r.refused.Load(), r.cancelled.Load(), r.maxSeen.Load())

	if v := r.violations.Load(); v != 0 {
		t.Errorf("%d admissions above the limit in force", v)
	}
	if m := r.maxSeen.Load(); m > maxLimit || m < 1 {
		t.Errorf("max holders %d, want within [1, %d]", m, maxLimit)
	}
	if got := r.admitted.Load() + r.refused.Load() + r.cancelled.Load(); got != ops {
		t.Errorf("outcomes %d, want %d", got, ops)
	}
	if n == 0 || r.refused.Load() == 0 {
		t.Errorf("the run did not exercise resizing and refusal: %d resizes, %d refused", n, r.refused.Load())
	}
	if s := b.Stats(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("after the run: %+v, want nothing held or queued", s)
	}
	assertExactCapacity(t, b, maxLimit)
}

// assertExactCapacity checks that exactly limit permits can be taken: none
// leaked (fewer) and none multiplied (more).
func assertExactCapacity(t *testing.T, b *Bulkhead, limit int) {
	t.Helper()
	if err := b.Resize(limit); err != nil {
		t.Fatal(err)
	}
	var ps []Permit
	for i := range limit {
		p, err := b.TryAcquire()
		if err != nil {
			t.Fatalf("permit %d of %d: %v", i+1, limit, err)
		}
		ps = append(ps, p)
	}
	if _, err := b.TryAcquire(); !errors.Is(err, ErrFull) {
		t.Fatalf("permit %d of %d: err = %v, want ErrFull", limit+1, limit, err)
	}
	for _, p := range ps {
		p.Release()
	}
	if got := b.InFlight(); got != 0 {
		t.Fatalf("in flight = %d after releasing all", got)
	}
}
