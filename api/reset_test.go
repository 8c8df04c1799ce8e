package api

import (
	"context"
	"errors"
	"strings"
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

// memFixture is a Server on a MemoryStore, behind httptest.
type memFixture struct {
	t   *testing.T
	st  *MemoryStore
	srv *Server
	url string
}

func newMemFixture(t *testing.T) *memFixture {
	t.Helper()
	st, err := NewMemoryStore(StoreSettings{})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: t0}
	srv, err := New(context.Background(), Settings{Store: st, Tokens: testTokens(), Initial: testConfig(), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &memFixture{t: t, st: st, srv: srv, url: newHTTPTest(t, srv).URL}
}

func (f *memFixture) do(method, path string, body any) resp {
	f.t.Helper()
	return doURL(f.t, f.url, method, path, writeTok, body)
}

// wipe empties the store, as a Redis restarted without persistence does.
func (f *memFixture) wipe() {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	f.st.current, f.st.lastGood, f.st.audit = nil, nil, nil
}

func (f *memFixture) stored() Snapshot {
	f.t.Helper()
	s, err := Load(context.Background(), f.st, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// TestWriteAfterStoreLost: the sequence on the API. After the store
// lost its data, reads still show the configuration in force (not []), the
// first write is refused with 409 and restores it, and a retry applies on
// top of it.
func TestWriteAfterStoreLost(t *testing.T) {
	f := newMemFixture(t)
	want(t, f.do("POST", "/v1/tiers", map[string]any{"name": "gold", "rate": 1000, "period": "1s"}), 201)
	before := f.stored()
	f.wipe()
	r := f.do("GET", "/v1/tiers", nil)
	want(t, r, 200)
	if !strings.Contains(string(r.body), `"gold"`) || !strings.Contains(string(r.body), `"free"`) {
		t.Fatalf("GET /v1/tiers on the wiped store: %s, want the tiers in force", r.body)
	}
	r = f.do("GET", "/v1/rules", nil)
	if want(t, r, 200); !strings.Contains(string(r.body), `"api"`) {
		t.Fatalf("GET /v1/rules on the wiped store: %s, want the rules in force", r.body)
	}
	r = f.do("POST", "/v1/tiers", map[string]any{"name": "silver", "rate": 100, "period": "1s"})
	want(t, r, 409)
	if msg := string(r.body); !strings.Contains(msg, "config store was reset: it is empty") ||
		!strings.Contains(msg, "not applied") || !strings.Contains(msg, "restored") {
		t.Fatalf("409 body %s: want why (store reset, empty) and what happened (not applied, restored)", msg)
	}
	if got := f.stored(); got.Version != before.Version || got.Generation != before.Generation ||
		string(canonical(got.Config)) != string(canonical(before.Config)) {
		t.Fatalf("after the refused write the store holds version %d generation %s, want the one in force (%d, %s)",
			got.Version, got.Generation, before.Version, before.Generation)
	}
	audit, _ := f.st.Audit(context.Background(), 10)
	if len(audit) != 1 || !strings.Contains(string(audit[0]), `"action":"config.restore"`) {
		t.Fatalf("audit after the restore: %s, want one config.restore entry", audit)
	}
	want(t, f.do("POST", "/v1/tiers", map[string]any{"name": "silver", "rate": 100, "period": "1s"}), 201)
	got := f.stored()
	if got.Version != before.Version+1 || len(got.Config.Tiers) != 4 || len(got.Config.Rules) != 1 {
		t.Fatalf("after the retry: version %d, %d tiers, %d rules; want %d, 4, 1",
			got.Version, len(got.Config.Tiers), len(got.Config.Rules), before.Version+1)
	}
}

// TestWriteAfterReseed: another instance seeded the lost store from its
// file (new generation, version 1): a write is refused and the newer
// configuration in force is restored over the seed.
func TestWriteAfterReseed(t *testing.T) {
	f := newMemFixture(t)
	want(t, f.do("POST", "/v1/tiers", map[string]any{"name": "gold", "rate": 1000, "period": "1s"}), 201)
	before := f.stored()
	f.wipe()
	seed := Snapshot{Config: testConfig(), Version: 1, UpdatedAt: t0, UpdatedBy: "initial", Generation: "other"}
	if ok, err := f.st.Swap(context.Background(), nil, canonical(seed), canonical(AuditEntry{})); !ok || err != nil {
		t.Fatal(ok, err)
	}
	want(t, f.do("DELETE", "/v1/keys/k1", nil), 409)
	if got := f.stored(); got.Version != before.Version || got.Generation != before.Generation {
		t.Fatalf("store holds version %d generation %s, want the one in force restored (%d, %s)",
			got.Version, got.Generation, before.Version, before.Generation)
	}
}

// TestWriteAfterNewerGeneration: a store of another generation that is
// newer than what this server knows is adopted: one write is refused (the
// writer saw another configuration), the next applies to it.
func TestWriteAfterNewerGeneration(t *testing.T) {
	f := newMemFixture(t)
	cur := f.stored()
	next := cur.clone()
	next.Version, next.Generation = cur.Version+5, "other"
	f.st.put(canonical(next))
	r := f.do("PUT", "/v1/keys/k9", map[string]any{"tier": "premium"})
	if want(t, r, 409); !strings.Contains(string(r.body), "generation other (version 6) replaced generation") {
		t.Fatalf("409 body %s, want the generations named", r.body)
	}
	want(t, f.do("PUT", "/v1/keys/k9", map[string]any{"tier": "premium"}), 201)
	if got := f.stored(); got.Version != 7 || got.Generation != "other" {
		t.Fatalf("store: version %d generation %s, want 7, other", got.Version, got.Generation)
	}
}

// TestWatcherRestoresLostStore: a watcher that finds the store empty keeps
// the configuration in force, restores it and reports ErrStoreReset.
func TestWatcherRestoresLostStore(t *testing.T) {
	f := newMemFixture(t)
	wt := startWatch(t, f.st, WatcherSettings{})
	first := wt.next(t, 5e9, "the seed", func(s Snapshot) bool { return s.Version == 1 })
	f.wipe()
	wt.w.Poll(context.Background())
	if got := f.stored(); got.Version != 1 || got.Generation != first.Generation {
		t.Fatalf("store after the watcher's poll: version %d generation %q, want the seed restored", got.Version, got.Generation)
	}
	if errs := wt.errors(); len(errs) == 0 || !errors.Is(errs[len(errs)-1], ErrStoreReset) {
		t.Fatalf("errors %v, want ErrStoreReset reported", errs)
	}
	if s := wt.w.Snapshot(); s.Version != 1 || len(s.Config.Tiers) != 2 {
		t.Fatalf("in force: version %d, %d tiers; want the seed", s.Version, len(s.Config.Tiers))
	}
}
