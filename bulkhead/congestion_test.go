package bulkhead

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGateCongestedPriorityShedsLessImportant: once a priority-1 caller has
// waited half of MaxWait, less important newcomers are shed at once for
// MaxWait, even below the limit, while equally and more important ones are
// admitted; after MaxWait they are admitted again. Without it, a less
// important call takes the permit the congested priority needs next.
func TestGateCongestedPriorityShedsLessImportant(t *testing.T) {
	const maxWait = 100 * time.Millisecond
	clk := newFakeClock()
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Hour, Now: clk.Now}, nil)
	g.s.MaxWait = maxWait // the window; the real timer never fires in this test (set after normalize)
	held := holdAll(t, g)
	out := make(chan result, 1)
	arrive(t, g, context.Background(), 1, 1, out) // priority 1 queues at t0
	clk.Set(t0.Add(maxWait / 2))                  // t1: it has waited half of MaxWait
	held[0].Release()
	r := <-out
	if r.err != nil {
		t.Fatalf("queued priority 1: %v", r.err)
	}
	r.p.Release() // nothing held now: every newcomer below would fit

	for _, tc := range []struct {
		at     time.Duration // since t0
		prio   int
		wantOK bool
	}{
		{maxWait / 2, 2, false},                    // t1: less important than the congested 1: shed
		{maxWait / 2, 1, true},                     // t1: as important: admitted
		{maxWait / 2, 0, true},                     // t1: more important: admitted
		{maxWait/2 + maxWait - 1, 3, false},        // t2: still within MaxWait of the long wait
		{maxWait/2 + maxWait, 2, true},             // t3: the congestion is over
		{maxWait/2 + maxWait + time.Hour, 9, true}, // t4: and stays over
	} {
		clk.Set(t0.Add(tc.at))
		p, err := g.Acquire(context.Background(), tc.prio)
		if tc.wantOK != (err == nil) {
			t.Fatalf("at t0+%v priority %d: err = %v, want admitted %v", tc.at, tc.prio, err, tc.wantOK)
		}
		if err != nil && !errors.Is(err, ErrShed) {
			t.Fatalf("at t0+%v priority %d: err = %v, want ErrShed", tc.at, tc.prio, err)
		}
		if err == nil {
			p.Release()
		}
	}
	if asked, refused := g.Refusals(); asked != 8 || refused != 2 {
		t.Errorf("Refusals() = %d asked, %d refused; want 8, 2", asked, refused)
	}
}

// TestGateShortWaitsDoNotCongest: waits shorter than half of MaxWait (the
// queue smoothing a burst) shed nobody.
func TestGateShortWaitsDoNotCongest(t *testing.T) {
	const maxWait = 100 * time.Millisecond
	clk := newFakeClock()
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Hour, Now: clk.Now}, nil)
	g.s.MaxWait = maxWait
	held := holdAll(t, g)
	out := make(chan result, 1)
	arrive(t, g, context.Background(), 0, 0, out)
	clk.Set(t0.Add(maxWait/2 - 1))
	held[0].Release()
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.p.Release()
	p, err := g.Acquire(context.Background(), 5)
	if err != nil {
		t.Fatalf("priority 5 after a short wait of priority 0: %v, want admitted", err)
	}
	p.Release()
}

// TestGateTopPriorityWaitsTopMaxWait: a priority-0 caller waits
// TopMaxWait; a less important one is shed after MaxWait.
func TestGateTopPriorityWaitsTopMaxWait(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Millisecond, TopMaxWait: time.Hour}, nil)
	held := holdAll(t, g)
	if _, err := g.Acquire(context.Background(), 1); !errors.Is(err, ErrShed) {
		t.Fatalf("priority 1: err = %v, want ErrShed after MaxWait", err)
	}
	out := make(chan result, 1)
	arrive(t, g, context.Background(), 0, 0, out)
	time.Sleep(10 * time.Millisecond) // ten times MaxWait: still queued
	held[0].Release()
	if r := <-out; r.err != nil {
		t.Fatalf("priority 0: err = %v, want a permit after waiting past MaxWait", r.err)
	} else {
		r.p.Release()
	}
	if got, _ := (GateSettings{MaxWait: time.Second}).normalize(); got.TopMaxWait != time.Second {
		t.Errorf("zero TopMaxWait normalised to %v, want MaxWait", got.TopMaxWait)
	}
	if _, err := NewGate("g", GateSettings{TopMaxWait: -1}, nil); err == nil || !strings.Contains(err.Error(), "TopMaxWait") {
		t.Errorf("negative TopMaxWait: err = %v", err)
	}
}

// TestGateTopPriorityCongestsForTopMaxWait: the congestion of priority 0
// lasts its own longest wait, TopMaxWait, not MaxWait. Its queue drains on
// that scale: with MaxWait, at a load where priority 0 alone fills the
// upstream, a less important call slipped in whenever its waits shortened
// for a moment, and each such call cost a priority-0 call later (about 2
// a second in bench overload --scenario slowdown).
func TestGateTopPriorityCongestsForTopMaxWait(t *testing.T) {
	const maxWait, topMaxWait = 100 * time.Millisecond, 200 * time.Millisecond
	clk := newFakeClock()
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Hour, Now: clk.Now}, nil)
	g.s.MaxWait, g.s.TopMaxWait = maxWait, topMaxWait // the windows; the real timers never fire here
	held := holdAll(t, g)
	out := make(chan result, 1)
	arrive(t, g, context.Background(), 0, 0, out) // priority 0 queues at t0
	clk.Set(t0.Add(maxWait / 2))                  // t1: a long wait
	held[0].Release()
	r := <-out
	if r.err != nil {
		t.Fatalf("queued priority 0: %v", r.err)
	}
	r.p.Release()
	for _, tc := range []struct {
		at     time.Duration // since t0
		wantOK bool
	}{
		{maxWait/2 + maxWait, false},        // t2: past MaxWait, within TopMaxWait: still shed
		{maxWait/2 + topMaxWait - 1, false}, // t3: the last instant
		{maxWait/2 + topMaxWait, true},      // t4: over
	} {
		clk.Set(t0.Add(tc.at))
		p, err := g.Acquire(context.Background(), 1)
		if tc.wantOK != (err == nil) {
			t.Fatalf("at t0+%v priority 1: err = %v, want admitted %v", tc.at, err, tc.wantOK)
		}
		if err == nil {
			p.Release()
		}
	}
}
