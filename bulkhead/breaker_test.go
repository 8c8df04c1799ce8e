package bulkhead

// About time in these tests. gobreaker v2.4.0 takes no clock: it reads
// time.Now itself when it decides that an open breaker's OpenTimeout has run
// out (CircuitBreaker.currentState), and it offers no hook to move a breaker
// to half-open by hand. So the one transition driven by time, open →
// half-open, is driven here by the real clock with a 1 ms OpenTimeout, and
// the tests wait (bounded) until State reports half_open. Everything asserted
// after that does not depend on time: a half-open gobreaker has no expiry, so
// how many of 100 concurrent callers pass is decided by its probe count
// alone, and the probes are held inside the call until every caller has been
// answered. Where this package's own logic reads time (RetryAfter), it uses
// BreakerSettings.Now and a fake clock at fixed instants.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errDep = errors.New("dependency failed")

func mustBreaker(t testing.TB, s BreakerSettings, m *Metrics) *Breaker {
	t.Helper()
	b, err := NewBreaker("store", s, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fail(context.Context) error { return errDep }
func ok(context.Context) error   { return nil }

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{
		StateClosed: "closed", StateHalfOpen: "half_open", StateOpen: "open", State(7): "State(7)",
	} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

func TestBreakerSettingsDefaultsAndErrors(t *testing.T) {
	got, err := BreakerSettings{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got.ConsecutiveFailures != 5 || got.OpenTimeout != 5*time.Second || got.HalfOpenMaxRequests != 1 ||
		got.Deadline != 50*time.Millisecond || got.IsFailure == nil || got.Now == nil {
		t.Errorf("zero BreakerSettings normalised to %+v", got)
	}
	for _, tc := range []struct {
		s    BreakerSettings
		want string
	}{
		{BreakerSettings{ConsecutiveFailures: -1}, "BreakerSettings.ConsecutiveFailures must not be negative, got -1"},
		{BreakerSettings{OpenTimeout: -1}, "BreakerSettings.OpenTimeout"},
		{BreakerSettings{HalfOpenMaxRequests: -3}, "BreakerSettings.HalfOpenMaxRequests"},
		{BreakerSettings{HalfOpenMaxRequests: 1 << 40}, "HalfOpenMaxRequests must be at most 4294967295"},
		{BreakerSettings{Deadline: -time.Millisecond}, "BreakerSettings.Deadline"},
	} {
		_, err := NewBreaker("b", tc.s, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bulkhead: ") {
			t.Errorf("NewBreaker(%+v) error = %v, want one naming %q", tc.s, err, tc.want)
		}
	}
	if _, err := NewBreaker("", BreakerSettings{}, nil); err == nil {
		t.Error("NewBreaker with an empty name: no error")
	}
}

func TestBreakerTripsOnConsecutiveErrors(t *testing.T) {
	var calls atomic.Int32
	counted := func(ctx context.Context) error { calls.Add(1); return fail(ctx) }
	b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 3, OpenTimeout: time.Hour}, nil)
	ctx := context.Background()
	// A success in between resets the run of failures.
	for i, fn := range []func(context.Context) error{counted, counted, ok, counted, counted} {
		if err := b.Call(ctx, fn); err == ErrOpen {
			t.Fatalf("call %d refused", i)
		}
	}
	if s := b.State(); s != StateClosed {
		t.Fatalf("after 2 failures in a row: %v, want closed", s)
	}
	if err := b.Call(ctx, counted); !errors.Is(err, errDep) {
		t.Fatalf("third failure returned %v, want the call's own error", err)
	}
	if s := b.State(); s != StateOpen {
		t.Fatalf("after 3 failures in a row: %v, want open", s)
	}
	before := calls.Load()
	if err := b.Call(ctx, counted); !errors.Is(err, ErrOpen) {
		t.Fatalf("open breaker: err = %v, want ErrOpen", err)
	}
	if calls.Load() != before {
		t.Fatal("open breaker ran the call")
	}
}

func TestBreakerTripsOnSlowCall(t *testing.T) {
	b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 2, OpenTimeout: time.Hour, Deadline: 5 * time.Millisecond}, nil)
	// A call that honours its context ends at the deadline with its error.
	err := b.Call(context.Background(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if s := b.State(); s != StateClosed {
		t.Fatalf("after one timeout: %v", s)
	}
	// A call that returns no error, but only after the deadline, still failed.
	v, err := Exec(context.Background(), b, func(ctx context.Context) (int, error) { <-ctx.Done(); return 42, nil })
	if v != 42 || err != nil {
		t.Fatalf("late success returned (%d, %v), want its own result", v, err)
	}
	if s := b.State(); s != StateOpen {
		t.Fatalf("after two calls past the deadline: %v, want open", s)
	}
}

func TestBreakerIgnoresCallerCancellation(t *testing.T) {
	b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	err := b.Call(ctx, func(c context.Context) error { cancel(); <-c.Done(); return c.Err() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if err := b.Call(ctx, ok); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended ctx: err = %v, want context.Canceled", err)
	}
	if s := b.State(); s != StateClosed {
		t.Fatalf("the caller's own cancellation tripped the breaker: %v", s)
	}
	notFailure := BreakerSettings{ConsecutiveFailures: 1, IsFailure: func(err error) bool { return err != errDep }}
	b2 := mustBreaker(t, notFailure, nil)
	_ = b2.Call(context.Background(), fail)
	if s := b2.State(); s != StateClosed {
		t.Fatalf("an error IsFailure rejects tripped the breaker: %v", s)
	}
}

func TestBreakerPanicCountsAsFailure(t *testing.T) {
	b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic swallowed")
			}
		}()
		_ = b.Call(context.Background(), func(context.Context) error { panic("boom") })
	}()
	if s := b.State(); s != StateOpen {
		t.Fatalf("after a panic: %v, want open", s)
	}
}

// trip opens b with failures, then waits (bounded, real clock: see the top of
// this file) for its 1 ms OpenTimeout to turn it half-open.
func tripToHalfOpen(t *testing.T, b *Breaker, failures int) {
	t.Helper()
	for range failures {
		_ = b.Call(context.Background(), fail)
	}
	if s := b.State(); s != StateOpen && s != StateHalfOpen {
		t.Fatalf("after %d failures: %v", failures, s)
	}
	eventually(t, "half_open", func() bool { return b.State() == StateHalfOpen })
}

// probeStorm sends callers concurrent calls to a half-open breaker. The calls
// that get through block until every caller has been answered or let in,
// then return result. It returns how many got through and how many got ErrOpen.
func probeStorm(t *testing.T, b *Breaker, callers int, result error) (passed, refused int64) {
	t.Helper()
	var in, out atomic.Int64
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.Call(context.Background(), func(context.Context) error {
				in.Add(1)
				<-gate
				return result
			})
			if errors.Is(err, ErrOpen) {
				out.Add(1)
			} else if err != result {
				t.Errorf("probe returned %v", err)
			}
		}()
	}
	eventually(t, "every caller answered or let in", func() bool { return in.Load()+out.Load() == int64(callers) })
	close(gate)
	wg.Wait()
	return in.Load(), out.Load()
}

func TestBreakerHalfOpenLetsExactlyMaxRequestsProbes(t *testing.T) {
	for _, probes := range []int{1, 3, 10} {
		// Deadline: an hour, so the held probes cannot time out.
		b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 2, OpenTimeout: time.Millisecond,
			HalfOpenMaxRequests: probes, Deadline: time.Hour}, nil)
		tripToHalfOpen(t, b, 2)
		if got := b.RetryAfter(); got != time.Hour {
			t.Errorf("half-open: RetryAfter = %v, want the probes' deadline", got)
		}
		passed, refused := probeStorm(t, b, 100, nil)
		if passed != int64(probes) || refused != int64(100-probes) {
			t.Fatalf("HalfOpenMaxRequests %d: %d probes passed, %d refused of 100", probes, passed, refused)
		}
		if s := b.State(); s != StateClosed {
			t.Fatalf("after %d successful probes: %v, want closed", probes, s)
		}
		if err := b.Call(context.Background(), ok); err != nil {
			t.Fatalf("closed again, a call failed: %v", err)
		}
	}
}

func TestBreakerFailedProbeReopens(t *testing.T) {
	var moves []string
	var mu sync.Mutex
	b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Millisecond,
		HalfOpenMaxRequests: 3, Deadline: time.Hour,
		OnStateChange: func(name string, from, to State) {
			mu.Lock()
			moves = append(moves, name+":"+from.String()+">"+to.String())
			mu.Unlock()
		}}, nil)
	tripToHalfOpen(t, b, 1)
	if err := b.Call(context.Background(), fail); !errors.Is(err, errDep) {
		t.Fatalf("probe: %v", err)
	}
	// Open again, then (1 ms later) half-open: either way not closed.
	if s := b.State(); s == StateClosed {
		t.Fatal("a failed probe closed the breaker")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(moves) < 3 || moves[0] != "store:closed>open" || moves[1] != "store:open>half_open" || moves[2] != "store:half_open>open" {
		t.Fatalf("transitions %v, want closed>open, open>half_open, half_open>open", moves)
	}
}

// RetryAfter at fixed instants of a fake clock; the breaker stays open on the
// real clock (OpenTimeout 10 s is long enough that it cannot turn half-open
// during the test on any machine that runs it in under 10 s).
func TestBreakerRetryAfterFakeClock(t *testing.T) {
	clk := newFakeClock()
	b := mustBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: 10 * time.Second, Now: clk.Now}, nil)
	if got := b.RetryAfter(); got != 0 {
		t.Fatalf("closed: RetryAfter = %v, want 0", got)
	}
	clk.Set(t0.Add(2 * time.Second))
	_ = b.Call(context.Background(), fail) // opens at t0+2s
	for _, st := range []struct {
		at, want time.Duration
	}{
		{2 * time.Second, 10 * time.Second},
		{5 * time.Second, 7 * time.Second},
		{11*time.Second + 500*time.Millisecond, 500 * time.Millisecond},
		{12 * time.Second, 0},
		{20 * time.Second, 0},
	} {
		clk.Set(t0.Add(st.at))
		if b.State() != StateOpen {
			t.Fatal("breaker left the open state early on the real clock")
		}
		if got := b.RetryAfter(); got != st.want {
			t.Errorf("t0+%v: RetryAfter = %v, want %v", st.at, got, st.want)
		}
	}
}
