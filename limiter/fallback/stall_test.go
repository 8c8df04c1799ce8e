package fallback_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
)

// slowStore is a shared store that answers after delay, or never (delay 0:
// a stalled Redis), honouring its context either way.
type slowStore struct {
	delay time.Duration
	calls atomic.Int64
}

func (s *slowStore) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	s.calls.Add(1)
	var after <-chan time.Time
	if s.delay > 0 {
		after = time.After(s.delay)
	}
	select {
	case <-after:
		return limiter.Decision{Allowed: true, Reason: limiter.Allowed, Limit: req.Rule.Limit}, nil
	case <-ctx.Done():
		return limiter.Decision{}, ctx.Err()
	}
}

// About time: these tests keep the shape (callers' deadlines
// shorter than the store's) scaled up tenfold, with a 50 ms Reserve, so
// that "answered within the caller's deadline" holds on a loaded host under
// -race; the root package's TestStalledRedisEveryFront runs 10, 20 and 50 ms.
const (
	stallDeadline = 500 * time.Millisecond // the store's (fallback.deadline)
	stallReserve  = 50 * time.Millisecond
)

// stallBreaker is the store's breaker: deadline stallDeadline, three
// failures in a row open it for an hour.
func stallBreaker(t *testing.T) *bulkhead.Breaker {
	b, err := bulkhead.NewBreaker("redis", bulkhead.BreakerSettings{
		ConsecutiveFailures: 3, OpenTimeout: time.Hour, Deadline: stallDeadline}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var stallRule = limiter.Rule{Name: "r", Limit: 100, Period: time.Second, Fallback: limiter.FallbackLocal}

// decideWithin decides one request under a caller deadline of d and fails
// unless a fallback decision came back before that deadline.
func decideWithin(t *testing.T, f *fallback.Store, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	dec, err := f.Decide(ctx, limiter.Request{Key: "k", Rule: stallRule})
	if err != nil {
		t.Fatalf("caller deadline %v: Decide: %v, want a decision from the fallback", d, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("caller deadline %v: the decision came after the caller's deadline", d)
	}
	if !dec.Fallback || !dec.Allowed {
		t.Fatalf("caller deadline %v: decision %+v, want allowed by the fallback", d, dec)
	}
}

// TestStallShorterThanCallerDeadline: a stalled shared store and callers
// whose deadlines (100, 200 ms) end before the store's own (500 ms): every
// decision comes from the fallback within the caller's deadline, and the
// calls Redis never answered within the store's deadline open the breaker
// as failures (an Envoy rate limit service behind a stalled Redis).
func TestStallShorterThanCallerDeadline(t *testing.T) {
	for _, callTimeout := range []time.Duration{0, time.Second} {
		for _, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
			shared, br := &slowStore{}, stallBreaker(t)
			f := newFallback(t, shared, fallback.Settings{Guard: br, CallTimeout: callTimeout, Reserve: stallReserve}, nil)
			for range 3 {
				decideWithin(t, f, d)
			}
			testenv.WaitFor(t, time.Second, "the breaker open after 3 stalled calls", func() bool {
				return br.State() == bulkhead.StateOpen
			})
			called := shared.calls.Load()
			decideWithin(t, f, d)
			if n := shared.calls.Load() - called; n != 0 {
				t.Fatalf("CallTimeout %v, deadline %v: the open breaker let %d calls through", callTimeout, d, n)
			}
		}
	}
}

// TestGaveUpButAnsweredInTimeIsNoFailure: a store that answers in 200 ms,
// within its 500 ms deadline, is healthy even for callers that could not
// wait that long (100 ms): they get the fallback, the breaker stays closed.
func TestGaveUpButAnsweredInTimeIsNoFailure(t *testing.T) {
	shared, br := &slowStore{delay: 200 * time.Millisecond}, stallBreaker(t)
	f := newFallback(t, shared, fallback.Settings{Guard: br, CallTimeout: time.Second, Reserve: stallReserve}, nil)
	for range 5 {
		decideWithin(t, f, 100*time.Millisecond)
	}
	time.Sleep(stallDeadline) // the given-up calls have ended, answered
	if s := br.State(); s != bulkhead.StateClosed {
		t.Fatalf("breaker %v after calls answered within the store's deadline, want closed", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*stallDeadline)
	defer cancel()
	d, err := f.Decide(ctx, limiter.Request{Key: "k", Rule: stallRule})
	if err != nil || d.Fallback {
		t.Fatalf("a caller that can wait: %+v, %v, want the shared decision", d, err)
	}
}

// TestCallerDeadlineTooShortDecidesLocally: a caller that has left less
// time than a shared attempt needs gets the fallback at once, and the
// shared store is not asked.
func TestCallerDeadlineTooShortDecidesLocally(t *testing.T) {
	shared := &slowStore{delay: time.Microsecond}
	f := newFallback(t, shared, fallback.Settings{Guard: stallBreaker(t)}, nil)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(fallback.MinSharedWait))
	defer cancel()
	d, err := f.Decide(ctx, limiter.Request{Key: "k", Rule: stallRule})
	if err != nil || !d.Fallback {
		t.Fatalf("Decide = %+v, %v, want a fallback decision", d, err)
	}
	if n := shared.calls.Load(); n != 0 {
		t.Fatalf("the shared store was asked %d times, want 0", n)
	}
	if f.FallbackActive() {
		t.Fatal("a decision that never asked the shared store made the fallback active")
	}
}

// TestStallWithGenerousCallerDeadline: a caller that can wait past the
// store's deadline gets the fallback, and the stall counts as a failure
// (the later calls, made during the fallback episode, when they end).
func TestStallWithGenerousCallerDeadline(t *testing.T) {
	shared, br := &slowStore{}, stallBreaker(t)
	f := newFallback(t, shared, fallback.Settings{Guard: br}, nil)
	for range 3 {
		decideWithin(t, f, 2*stallDeadline)
	}
	testenv.WaitFor(t, time.Second, "the breaker open after 3 stalled calls", func() bool {
		return br.State() == bulkhead.StateOpen
	})
}

// TestLateWakeDecidesLocally: a decision whose caller's deadline has passed
// by the time it looks again (a busy host woke it late: its timer and the
// deadline both fired) still answers from the fallback; it returned the
// caller's error, half the time, by which of the two it saw first.
func TestLateWakeDecidesLocally(t *testing.T) {
	f := newFallback(t, &slowStore{}, fallback.Settings{Guard: stallBreaker(t), CallTimeout: time.Second}, nil)
	for i := range 50 {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		d, err := f.Decide(ctx, limiter.Request{Key: "k", Rule: stallRule})
		cancel()
		if err != nil || !d.Fallback || !d.Allowed {
			t.Fatalf("decision %d past its deadline: %+v, %v; want a fallback decision", i, d, err)
		}
	}
}
