package bulkhead

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSettingsDefaultsAndErrors(t *testing.T) {
	got, err := Settings{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got.Limit != DefaultLimit || got.MaxQueue != 0 || got.MaxWait != DefaultMaxWait ||
		got.MinRetryAfter != DefaultMinRetryAfter || got.MaxRetryAfter != DefaultMaxRetryAfter || got.Now == nil {
		t.Errorf("zero Settings normalised to %+v", got)
	}
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Limit: -1}, "Settings.Limit must not be negative, got -1"},
		{Settings{MaxQueue: -2}, "Settings.MaxQueue"},
		{Settings{MaxWait: -time.Second}, "Settings.MaxWait"},
		{Settings{MinRetryAfter: -1}, "Settings.MinRetryAfter"},
		{Settings{MaxRetryAfter: -1}, "Settings.MaxRetryAfter"},
		{Settings{MinRetryAfter: 2 * time.Minute}, "MinRetryAfter (2m0s) exceeds Settings.MaxRetryAfter (1m0s)"},
	} {
		_, err := New("t", tc.s, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bulkhead: ") {
			t.Errorf("New(%+v) error = %v, want one naming %q", tc.s, err, tc.want)
		}
	}
	if _, err := New("", Settings{}, nil); err == nil {
		t.Error("New with an empty name: no error")
	}
	b := mustNew(t, "t", Settings{}, nil)
	if err := b.Resize(0); err == nil || !strings.Contains(err.Error(), "limit must be at least 1, got 0") {
		t.Errorf("Resize(0) error = %v", err)
	}
}

// hold takes n permits from n goroutines that keep them until release is
// closed, and returns once all n hold one.
func hold(t *testing.T, b *Bulkhead, n int, release <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	var wg, held sync.WaitGroup
	held.Add(n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := b.Acquire(context.Background())
			held.Done()
			if err != nil {
				t.Errorf("holder: Acquire: %v", err)
				return
			}
			<-release
			p.Release()
		}()
	}
	held.Wait()
	return &wg
}

func TestFullRefusesAtOnceWithoutQueue(t *testing.T) {
	const c = 4
	b := mustNew(t, "t", Settings{Limit: c}, nil)
	release := make(chan struct{})
	wg := hold(t, b, c, release)
	// With no queue there is no waiting path: Acquire with a context that
	// never ends must return, refused.
	if _, err := b.Acquire(context.Background()); !errors.Is(err, ErrFull) {
		t.Fatalf("call %d: err = %v, want ErrFull", c+1, err)
	}
	if _, err := b.TryAcquire(); !errors.Is(err, ErrFull) {
		t.Fatalf("TryAcquire on a full bulkhead: err = %v, want ErrFull", err)
	}
	if got := b.InFlight(); got != c {
		t.Fatalf("in flight = %d, want %d", got, c)
	}
	close(release)
	wg.Wait()
	p, err := b.TryAcquire()
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	p.Release()
	if got := b.InFlight(); got != 0 {
		t.Fatalf("in flight at the end = %d", got)
	}
}

func TestQueueWaitIsBoundedByMaxWait(t *testing.T) {
	const maxWait = 20 * time.Millisecond
	b := mustNew(t, "t", Settings{Limit: 1, MaxQueue: 1, MaxWait: maxWait}, nil)
	p, _ := b.TryAcquire()
	defer p.Release()
	start := time.Now()
	_, err := b.Acquire(context.Background())
	if !errors.Is(err, ErrFull) {
		t.Fatalf("err = %v, want ErrFull after MaxWait", err)
	}
	if waited := time.Since(start); waited < maxWait {
		t.Errorf("refused after %v, before MaxWait %v", waited, maxWait)
	}
	if s := b.Stats(); s.Waiting != 0 || s.InFlight != 1 {
		t.Errorf("after timeout: %+v", s)
	}
}

func TestQueueFullRefusesAtOnce(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 1, MaxQueue: 1, MaxWait: time.Hour}, nil)
	p, _ := b.TryAcquire()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.Acquire(ctx); done <- err }()
	eventually(t, "one queued caller", func() bool { return b.Stats().Waiting == 1 })
	// The queue is full: the next caller gets no place and no wait (MaxWait
	// is an hour, so a wait would hang the test).
	if _, err := b.Acquire(context.Background()); !errors.Is(err, ErrFull) {
		t.Fatalf("err = %v, want ErrFull", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued caller: err = %v, want context.Canceled", err)
	}
	p.Release()
	if s := b.Stats(); s.Waiting != 0 || s.InFlight != 0 {
		t.Errorf("at the end: %+v", s)
	}
}

func TestQueueHonoursContext(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 1, MaxQueue: 4, MaxWait: time.Hour}, nil)
	p, _ := b.TryAcquire()
	defer p.Release()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := b.Acquire(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended ctx: err = %v, want context.Canceled", err)
	}
	if s := b.Stats(); s.Waiting != 0 || s.InFlight != 1 {
		t.Errorf("after cancellations: %+v, want 1 in flight and none waiting", s)
	}
}

func TestQueueServesInArrivalOrder(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 1, MaxQueue: 3, MaxWait: time.Hour}, nil)
	first, _ := b.TryAcquire()
	got := make(chan int, 3)
	next := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			got <- i
			<-next
			p.Release()
		}()
		eventually(t, "waiter queued", func() bool { return b.Stats().Waiting == i+1 })
	}
	first.Release()
	for want := range 3 {
		if i := <-got; i != want {
			t.Fatalf("waiter %d admitted, want %d", i, want)
		}
		next <- struct{}{}
	}
	wg.Wait()
	if s := b.Stats(); s.Waiting != 0 || s.InFlight != 0 {
		t.Errorf("at the end: %+v", s)
	}
}

func TestReleaseFreesAtMostOnce(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 2}, nil)
	p, _ := b.TryAcquire()
	q, _ := b.TryAcquire()
	cp := p
	p.Release()
	p.Release()
	cp.Release()
	if got := b.InFlight(); got != 1 {
		t.Fatalf("after releasing one permit three times: in flight = %d, want 1", got)
	}
	// The pooled slot may now serve a new holder; the stale copy must not free it.
	r, _ := b.TryAcquire()
	cp.Release()
	if got := b.InFlight(); got != 2 {
		t.Fatalf("a stale copy freed another holder's permit: in flight = %d, want 2", got)
	}
	q.Release()
	r.Release()
	Permit{}.Release()
	if got := b.InFlight(); got != 0 {
		t.Fatalf("in flight at the end = %d", got)
	}
}

func TestShrinkLetsHoldersFinish(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 8}, nil)
	var ps []Permit
	for range 8 {
		p, err := b.TryAcquire()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if err := b.Resize(3); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		release  int
		admitted bool
	}{
		{0, false}, // 8 held, limit 3
		{4, false}, // 4 held
		{1, false}, // 3 held: at the limit
		{1, true},  // 2 held: one place
	}
	for i, st := range steps {
		for range st.release {
			ps[0].Release()
			ps = ps[1:]
		}
		p, err := b.TryAcquire()
		if (err == nil) != st.admitted {
			t.Fatalf("step %d (in flight %d): admitted=%v, want %v", i, b.InFlight(), err == nil, st.admitted)
		}
		if err == nil {
			ps = append(ps, p)
		}
	}
	for _, p := range ps {
		p.Release()
	}
	if got := b.InFlight(); got != 0 {
		t.Fatalf("in flight at the end = %d", got)
	}
}

func TestGrowAdmitsWaiters(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 1, MaxQueue: 2, MaxWait: time.Hour}, nil)
	p, _ := b.TryAcquire()
	var wg sync.WaitGroup
	permits := make(chan Permit, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := b.Acquire(context.Background())
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			permits <- q
		}()
	}
	eventually(t, "two queued callers", func() bool { return b.Stats().Waiting == 2 })
	if err := b.Resize(3); err != nil {
		t.Fatal(err)
	}
	wg.Wait() // both admitted by the resize (MaxWait is an hour)
	close(permits)
	if got := b.InFlight(); got != 3 {
		t.Fatalf("in flight = %d, want 3", got)
	}
	p.Release()
	for q := range permits {
		q.Release()
	}
	if s := b.Stats(); s.InFlight != 0 || s.Waiting != 0 || s.Limit != 3 {
		t.Fatalf("at the end: %+v", s)
	}
}

func TestDoReleasesOnReturnAndPanic(t *testing.T) {
	b := mustNew(t, "t", Settings{Limit: 1}, nil)
	sentinel := errors.New("boom")
	if err := b.Do(context.Background(), func(context.Context) error { return sentinel }); err != sentinel {
		t.Fatalf("Do returned %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = b.Do(context.Background(), func(context.Context) error { panic("x") })
	}()
	if got := b.InFlight(); got != 0 {
		t.Fatalf("in flight after Do = %d", got)
	}
}

// RetryAfter at fixed instants t0..t6: each row takes a permit at t0 and
// releases it after hold on a fake clock; the moving average of hold times
// (weight 1/8) over the limit of 2 gives the suggestion, within [1s, 30s].
func TestRetryAfterFakeClock(t *testing.T) {
	clk := newFakeClock()
	b := mustNew(t, "t", Settings{Limit: 2, MaxQueue: 2, MaxWait: time.Hour,
		MinRetryAfter: time.Second, MaxRetryAfter: 30 * time.Second, Now: clk.Now}, nil)
	if got := b.RetryAfter(); got != time.Second {
		t.Fatalf("no history: RetryAfter = %v, want the 1s floor", got)
	}
	ms := time.Millisecond
	steps := []struct {
		hold time.Duration
		avg  time.Duration // by hand
		want time.Duration
	}{
		{10 * time.Second, 10 * time.Second, 5 * time.Second},                     // t0: first sample
		{18 * time.Second, 11 * time.Second, 5500 * ms},                           // t1: 10 + 8/8
		{11 * time.Second, 11 * time.Second, 5500 * ms},                           // t2
		{3 * time.Second, 10 * time.Second, 5 * time.Second},                      // t3: 11 - 8/8
		{0, 8750 * ms, 4375 * ms},                                                 // t4: 10 - 10/8
		{1 * time.Second, 7781250 * time.Microsecond, 3890625 * time.Microsecond}, // t5
		{500 * time.Second, 69308593750, 30 * time.Second},                        // t6: 7.78125 + 492.21875/8, capped
	}
	for i, st := range steps {
		clk.Set(t0)
		p, _ := b.TryAcquire()
		clk.Set(t0.Add(st.hold))
		p.Release()
		if got := time.Duration(b.hold.Load()); got != st.avg {
			t.Fatalf("t%d: average hold = %v, want %v", i, got, st.avg)
		}
		if got := b.RetryAfter(); got != st.want {
			t.Errorf("t%d: RetryAfter = %v, want %v", i, got, st.want)
		}
	}
	// Queued callers push the suggestion out: (2 waiting + 1) × avg / limit.
	b.hold.Store(int64(4 * time.Second))
	p1, _ := b.TryAcquire()
	p2, _ := b.TryAcquire()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = b.Acquire(ctx) }()
	}
	eventually(t, "two queued callers", func() bool { return b.Stats().Waiting == 2 })
	if got, want := b.RetryAfter(), 6*time.Second; got != want {
		t.Errorf("with 2 queued: RetryAfter = %v, want %v", got, want)
	}
	cancel()
	wg.Wait()
	p1.Release()
	p2.Release()
}

// A Resize that shrinks the limit between tryInc's read of the limit and
// its count must not leave a permit above the new limit: Resize's caller
// may already have seen the permits in flight within it. Here 1 permit is
// held under a limit of 2; a second acquisition reads the limit (2), then
// the limit drops to 1 before it counts: it is refused and 1 stays in
// flight. (TestResizeUnderLoadLeaksNoPermit caught this in a CI run.)
func TestShrinkDuringAcquireAdmitsNothingAbove(t *testing.T) {
	b := mustNew(t, "shrink", Settings{Limit: 2}, nil)
	held, err := b.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	hookBeforeCount = func() { hookBeforeCount = nil; _ = b.Resize(1) }
	defer func() { hookBeforeCount = nil }()
	p, err := b.TryAcquire()
	if err == nil {
		p.Release()
		t.Fatalf("a permit was taken above the shrunk limit: %d in flight under a limit of %d (want ErrFull)", b.InFlight()+1, b.Limit())
	}
	if !errors.Is(err, ErrFull) || b.InFlight() != 1 {
		t.Errorf("err %v, %d in flight; want ErrFull and 1", err, b.InFlight())
	}
}
