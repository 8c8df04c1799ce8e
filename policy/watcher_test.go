package policy

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// watch runs a Watcher of st until the test ends, collecting deliveries.
type watch struct {
	w    *Watcher
	got  chan Snapshot
	mu   sync.Mutex
	errs []error
}

func startWatch(t *testing.T, st Store, s WatcherSettings) *watch {
	t.Helper()
	wt := &watch{got: make(chan Snapshot, 64)}
	s.OnChange = func(s Snapshot) { wt.got <- s }
	s.OnError = func(err error) { wt.mu.Lock(); wt.errs = append(wt.errs, err); wt.mu.Unlock() }
	w, err := NewWatcher(st, s)
	if err != nil {
		t.Fatal(err)
	}
	wt.w = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	return wt
}

// next waits at most d for a delivery matching ok.
func (wt *watch) next(t *testing.T, d time.Duration, what string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case s := <-wt.got:
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("%s: not delivered within %v", what, d)
		}
	}
}

func (wt *watch) errors() []error {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return append([]error(nil), wt.errs...)
}

func rateIs(n int64) func(Snapshot) bool {
	return func(s Snapshot) bool { return s.Config.Tiers["free"].Rate == n }
}

// A tier change written through a Doc (as the admin API writes) reaches a
// Watcher within 2 s.
func TestWatcherPropagation(t *testing.T) {
	f := newFixture(t)
	wt := startWatch(t, f.store, WatcherSettings{Now: f.clock.Now})
	wt.next(t, 5*time.Second, "initial config", rateIs(10))
	f.setTier("free", Tier{Rate: 77, Period: sec(1)})
	s := wt.next(t, 2*time.Second, "tier change", rateIs(77))
	if s.Version != 2 || wt.w.Snapshot().Version != 2 {
		t.Fatalf("version %d / %d", s.Version, wt.w.Snapshot().Version)
	}
	f.pin("premium", 0.4, time.Minute)
	wt.next(t, 2*time.Second, "pin", func(s Snapshot) bool { return len(s.Pins) == 1 })
	if p := wt.w.Pins(); p["premium"].Multiplier != 0.4 {
		t.Fatalf("Pins: %v", p)
	}
	f.clock.Add(time.Minute)
	if p := wt.w.Pins(); len(p) != 0 {
		t.Fatalf("expired pin in force: %v", p)
	}
}

// A document written without a notification (a lost message) is still
// picked up by the poll within 2 s; a bad one is reported, not delivered.
func TestWatcherPollAndBadDocument(t *testing.T) {
	f := newFixture(t)
	wt := startWatch(t, f.store, WatcherSettings{})
	wt.next(t, 5*time.Second, "initial config", rateIs(10))
	ctx := context.Background()

	next := f.snapshot()
	next.Version++
	next.Config.Tiers["free"] = Tier{Rate: 55, Period: sec(1)}
	f.set(canonical(next)) // no PUBLISH
	wt.next(t, 2*time.Second, "polled change", rateIs(55))

	f.set([]byte(`{"version":9,"config":{"tiers":{"free":{"rate":0}}}}`))
	f.rc.Publish(ctx, "test:config:changed", "x")
	deadline := time.Now().Add(5 * time.Second)
	for len(wt.errors()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if errs := wt.errors(); len(errs) != 1 || !errors.Is(errs[0], ErrBadStored) {
		t.Fatalf("errors: %v", errs)
	}
	if s := wt.w.Snapshot(); s.Config.Tiers["free"].Rate != 55 { // still the last good one
		t.Fatalf("in force after a bad document: %+v", s.Config.Tiers["free"])
	}
	select {
	case s := <-wt.got:
		t.Fatalf("delivered %+v after a bad document", s.Config.Tiers["free"])
	default:
	}
	f.setTier("free", Tier{Rate: 66, Period: sec(1)})
	wt.next(t, 2*time.Second, "change after a bad document", rateIs(66))
	if n := len(wt.errors()); n != 1 {
		t.Fatalf("%d errors, want the bad document reported once", n)
	}
}

func TestWatcherMemory(t *testing.T) {
	m, _ := NewMemoryStore(StoreSettings{})
	doc := NewDoc(m)
	if _, err := doc.Seed(context.Background(), testConfig(), t0, 0); err != nil {
		t.Fatal(err)
	}
	wt := startWatch(t, m, WatcherSettings{Interval: time.Hour}) // notifications only
	wt.next(t, 5*time.Second, "initial", rateIs(10))
	_, err := doc.Update(context.Background(), Write{Who: "alice"}, func(s *Snapshot) (Change, error) {
		s.Config.Tiers["free"] = Tier{Rate: 8, Period: sec(1)}
		return Change{Action: "tier.replace", Resource: "tiers/free", After: s.Config.Tiers["free"]}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wt.next(t, 2*time.Second, "change", rateIs(8))
}

func TestWatcherSettings(t *testing.T) {
	m, _ := NewMemoryStore(StoreSettings{})
	for _, s := range []WatcherSettings{{}, {OnChange: func(Snapshot) {}, Interval: -1}} {
		if _, err := NewWatcher(m, s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, err := NewWatcher(nil, WatcherSettings{OnChange: func(Snapshot) {}}); err == nil {
		t.Error("nil store accepted")
	}
}
