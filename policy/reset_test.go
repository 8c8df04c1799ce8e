package policy

import (
	"context"
	"errors"
	"testing"
)

func TestCheckReset(t *testing.T) {
	g1 := func(v int64) Snapshot { return Snapshot{Version: v, Generation: "g1"} }
	g2 := func(v int64) Snapshot { return Snapshot{Version: v, Generation: "g2"} }
	for _, tc := range []struct {
		name         string
		stored, best Snapshot
		reset, lost  bool
	}{
		{"nothing known", Snapshot{}, Snapshot{}, false, false},
		{"empty, known without generation", Snapshot{}, Snapshot{Version: 3}, true, true},
		{"generation added to a legacy document", g1(4), Snapshot{Version: 3}, false, false},
		{"older than a legacy document", g1(2), Snapshot{Version: 3}, true, true},
		{"empty store", Snapshot{}, g1(3), true, true},
		{"same", g1(3), g1(3), false, false},
		{"newer, same generation", g1(4), g1(3), false, false},
		{"older, same generation", g1(2), g1(3), true, true},
		{"older, other generation", g2(1), g1(3), true, true},
		{"newer, other generation", g2(5), g1(3), true, false},
		{"same version, other generation", g2(3), g1(3), true, false},
	} {
		re := checkReset(tc.stored, tc.best)
		if (re != nil) != tc.reset || (re != nil && re.lost != tc.lost) {
			t.Errorf("%s: %v, want reset %v lost %v", tc.name, re, tc.reset, tc.lost)
		}
		if re != nil && !errors.Is(re, ErrStoreReset) {
			t.Errorf("%s: %v does not wrap ErrStoreReset", tc.name, re)
		}
	}
}

// wipe empties st, as a Redis restarted without persistence does.
func wipe(st *MemoryStore) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.current, st.lastGood, st.audit = nil, nil, nil
}

// TestWatcherRestoresLostStore: a watcher that finds the store empty keeps
// the configuration in force, restores it and reports ErrStoreReset.
func TestWatcherRestoresLostStore(t *testing.T) {
	st, err := NewMemoryStore(StoreSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewDoc(st).Seed(context.Background(), testConfig(), t0, 0); err != nil {
		t.Fatal(err)
	}
	wt := startWatch(t, st, WatcherSettings{})
	first := wt.next(t, 5e9, "the seed", func(s Snapshot) bool { return s.Version == 1 })
	wipe(st)
	wt.w.Poll(context.Background())
	if got, _ := Load(context.Background(), st); got.Version != 1 || got.Generation != first.Generation {
		t.Fatalf("store after the watcher's poll: version %d generation %q, want the seed restored", got.Version, got.Generation)
	}
	if errs := wt.errors(); len(errs) == 0 || !errors.Is(errs[len(errs)-1], ErrStoreReset) {
		t.Fatalf("errors %v, want ErrStoreReset reported", errs)
	}
	if s := wt.w.Snapshot(); s.Version != 1 || len(s.Config.Tiers) != 2 {
		t.Fatalf("in force: version %d, %d tiers; want the seed", s.Version, len(s.Config.Tiers))
	}
}
