package enforce_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// noneEnforcer is bench http's memory-none: one rule per API key that
// writes no rate-limit headers, on the in-memory store, limit per second.
func noneEnforcer(t testing.TB, store limiter.Store, limit int64) *enforce.Enforcer {
	t.Helper()
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: limit, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, Headers: enforce.HeadersNone}}}
	e, err := enforce.New(store, p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func keyRequest(key string) *http.Request {
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", key)
	return r
}

// TestHeadersNoneNoAllocs: on a store that copies the keys it keeps (the
// in-memory store), a request whose rule writes no headers is decided
// without allocating: its bucket key is made in pooled memory.
func TestHeadersNoneNoAllocs(t *testing.T) {
	e := noneEnforcer(t, limiter.NewMemory(), 1e9)
	h := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := keyRequest("k1")
	w := &discardWriter{h: http.Header{}}
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("Middleware: %v allocations per request, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = e.Check(r.Context(), r) }); n != 0 {
		t.Errorf("Check: %v allocations, want 0", n)
	}
}

// TestPooledKeysStay: the keys made in pooled memory and reused from one
// request to the next are the in-memory store's own copies: 50 keys asked
// in turn keep 50 buckets, each spent by its own requests only.
func TestPooledKeysStay(t *testing.T) {
	m := limiter.NewMemory(limiter.WithClock(func() time.Time { return t0 }))
	e := noneEnforcer(t, m, 3)
	for round := range 3 {
		for i := range 50 {
			if res := e.Check(context.Background(), keyRequest("key-"+strconv.Itoa(i))); !res.Allowed ||
				res.Decision.Remaining != int64(2-round) {
				t.Fatalf("round %d key %d: allowed %v remaining %d, want allowed, %d", round, i, res.Allowed,
					res.Decision.Remaining, 2-round)
			}
		}
	}
	if n := m.Len(); n != 50 {
		t.Fatalf("the store holds %d keys, want 50", n)
	}
	if res := e.Check(context.Background(), keyRequest("key-7")); res.Allowed {
		t.Fatal("the fourth request of key-7 was allowed, want refused: its bucket of 3 is spent")
	}
}

// keepingStore keeps every key it is asked for, as a store that batches
// or leases may: the keys it is given must not change after Decide.
type keepingStore struct {
	limiter.Store
	keys []string
}

func (k *keepingStore) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	k.keys = append(k.keys, req.Key)
	return k.Store.Decide(ctx, req)
}

// TestKeptKeysStay: a store that does not say it copies keys gets keys
// that are never reused: the ones it kept still read as made.
func TestKeptKeysStay(t *testing.T) {
	s := &keepingStore{Store: limiter.NewMemory()}
	e := noneEnforcer(t, s, 1e9)
	for i := range 20 {
		e.Check(context.Background(), keyRequest("key-"+strconv.Itoa(i)))
	}
	for i, k := range s.keys {
		if want := "per-key|free|" + strconv.Itoa(len("key-"+strconv.Itoa(i))) + ":key-" + strconv.Itoa(i); k != want {
			t.Fatalf("kept key %d reads %q, want %q", i, k, want)
		}
	}
}

// TestClockReadForLegacyOnly: the enforcer reads its clock for a decision
// only when X-RateLimit-Reset (an epoch time) is to be written: not for
// headers none nor ietf, whose values are relative.
func TestClockReadForLegacyOnly(t *testing.T) {
	for _, c := range []struct {
		set   enforce.HeaderSet
		reads int
	}{{enforce.HeadersNone, 0}, {enforce.HeadersIETF, 0}, {enforce.HeadersLegacy, 1}, {enforce.HeadersBoth, 1}} {
		reads := 0
		now := func() time.Time { reads++; return t0 }
		p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 10, Period: time.Second, Priority: 1}},
			Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, Headers: c.set}}}
		e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		h := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, keyRequest("k1"))
		if reads != c.reads {
			t.Errorf("headers %s: the clock read %d times, want %d", c.set, reads, c.reads)
		}
		if c.reads == 1 && w.Header().Get(enforce.HeaderReset) != strconv.FormatInt(t0.Unix()+1, 10) {
			t.Errorf("headers %s: X-RateLimit-Reset %q, want %d", c.set, w.Header().Get(enforce.HeaderReset), t0.Unix()+1)
		}
	}
}
