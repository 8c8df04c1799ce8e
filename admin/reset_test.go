package admin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/policy"
)

// handStore is a policy.MemoryStore that an operator can wipe (a Redis
// restarted without persistence) or write by hand (a document of another
// instance's generation): each replaces the store whole, as those do.
type handStore struct {
	mu sync.Mutex
	st *policy.MemoryStore
}

func newHandStore(t *testing.T) *handStore {
	h := &handStore{}
	h.wipe()
	return h
}

func (h *handStore) cur() *policy.MemoryStore { h.mu.Lock(); defer h.mu.Unlock(); return h.st }

func (h *handStore) Get(ctx context.Context) ([]byte, []byte, error) { return h.cur().Get(ctx) }
func (h *handStore) Swap(ctx context.Context, old, next, entry []byte) (bool, error) {
	return h.cur().Swap(ctx, old, next, entry)
}
func (h *handStore) Audit(ctx context.Context, n int) ([][]byte, error) { return h.cur().Audit(ctx, n) }
func (h *handStore) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	return h.cur().Subscribe(ctx)
}

// wipe empties the store.
func (h *handStore) wipe() {
	st, err := policy.NewMemoryStore(policy.StoreSettings{})
	if err != nil {
		panic(err)
	}
	h.mu.Lock()
	h.st = st
	h.mu.Unlock()
}

// put makes raw the only document of the store.
func (h *handStore) put(raw []byte) {
	h.wipe()
	if ok, err := h.cur().Swap(context.Background(), nil, raw, []byte("{}")); !ok || err != nil {
		panic(fmt.Sprint("put: ", ok, err))
	}
}

// memFixture is a Server on a handStore, behind httptest.
type memFixture struct {
	t   *testing.T
	st  *handStore
	srv *Server
	url string
}

func newMemFixture(t *testing.T) *memFixture {
	t.Helper()
	st := newHandStore(t)
	c := fakeclock.New(t0)
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

func (f *memFixture) wipe() { f.st.wipe() }

func (f *memFixture) stored() policy.Snapshot {
	f.t.Helper()
	s, err := policy.Load(context.Background(), f.st)
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
		string(mustJSON(got.Config)) != string(mustJSON(before.Config)) {
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
	seed := policy.Snapshot{Config: testConfig(), Version: 1, UpdatedAt: t0, UpdatedBy: "initial", Generation: "other"}
	if ok, err := f.st.Swap(context.Background(), nil, mustJSON(seed), mustJSON(policy.AuditEntry{})); !ok || err != nil {
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
	next := cur // its maps are not changed
	next.Version, next.Generation = cur.Version+5, "other"
	f.st.put(mustJSON(next))
	r := f.do("PUT", "/v1/keys/k9", map[string]any{"tier": "premium"})
	if want(t, r, 409); !strings.Contains(string(r.body), "generation other (version 6) replaced generation") {
		t.Fatalf("409 body %s, want the generations named", r.body)
	}
	want(t, f.do("PUT", "/v1/keys/k9", map[string]any{"tier": "premium"}), 201)
	if got := f.stored(); got.Version != 7 || got.Generation != "other" {
		t.Fatalf("store: version %d generation %s, want 7, other", got.Version, got.Generation)
	}
}
