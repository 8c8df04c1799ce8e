package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// storeConformance runs the Store contract against st; corrupt writes a
// raw current document the way an operator editing the key would.
func storeConformance(t *testing.T, st Store, corrupt func([]byte)) {
	ctx := context.Background()
	if cur, good, err := st.Get(ctx); err != nil || cur != nil || good != nil {
		t.Fatalf("empty store: %q %q %v", cur, good, err)
	}
	sub, err := st.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := []byte(`{"v":1}`), []byte(`{"v":2}`)
	swap := func(old, next []byte, entry string, want bool) {
		t.Helper()
		if ok, err := st.Swap(ctx, old, next, []byte(entry)); err != nil || ok != want {
			t.Fatalf("Swap(%s → %s) = %v %v, want %v", old, next, ok, err, want)
		}
	}
	swap([]byte{}, v1, "x", false) // absent is not the empty document
	swap(nil, v1, "a", true)
	select {
	case <-sub:
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after Swap")
	}
	swap(nil, v2, "x", false)
	swap(v2, v2, "x", false)
	swap(v1, v2, "b", true)
	if cur, good, _ := st.Get(ctx); string(cur) != string(v2) || string(good) != string(v2) {
		t.Fatalf("after swaps: %s %s", cur, good)
	}
	corrupt([]byte("garbage"))
	if cur, good, _ := st.Get(ctx); string(cur) != "garbage" || string(good) != string(v2) {
		t.Fatalf("after corrupt: %s %s", cur, good)
	}
	swap(v2, v1, "x", false)
	swap([]byte("garbage"), v1, "c", true)
	if a, _ := st.Audit(ctx, 10); len(a) != 3 || string(a[0]) != "c" || string(a[2]) != "a" {
		t.Fatalf("audit %q", a)
	}
	if a, _ := st.Audit(ctx, 0); len(a) != 0 {
		t.Fatalf("audit(0) %q", a)
	}
}

func TestStoreConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		m, err := NewMemoryStore(StoreSettings{})
		if err != nil {
			t.Fatal(err)
		}
		storeConformance(t, m, m.put)
	})
	t.Run("redis", func(t *testing.T) {
		rc := testenv.StartRedis(t).Client()
		st, err := NewRedisStore(rc, StoreSettings{})
		if err != nil {
			t.Fatal(err)
		}
		storeConformance(t, st, func(b []byte) {
			if err := rc.Set(context.Background(), "throttled:{config}", b, 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("cluster", func(t *testing.T) {
		cl := testenv.StartCluster(t).Client(t)
		st, err := NewRedisStore(cl, StoreSettings{})
		if err != nil {
			t.Fatal(err)
		}
		storeConformance(t, st, func(b []byte) {
			if err := cl.Set(context.Background(), "throttled:{config}", b, 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestStoreSettings(t *testing.T) {
	if _, err := NewMemoryStore(StoreSettings{AuditLimit: -1}); err == nil {
		t.Error("negative AuditLimit accepted")
	}
	if _, err := NewRedisStore(nil, StoreSettings{}); err == nil {
		t.Error("nil client accepted")
	}
}

// The configuration survives a restart: a new Server on the same Redis
// serves what the old one wrote, and does not reseed.
func TestPersistenceAcrossRestart(t *testing.T) {
	f := newFixture(t)
	want(t, f.do("POST", "/v1/tiers", writeTok, `{"name":"gold","rate":5,"period":"1s"}`), 201)
	want(t, f.do("PUT", "/v1/keys/k7", writeTok, `{"tier":"gold"}`), 201)
	tag := f.do("GET", "/v1/tiers/gold", readTok, nil).etag()
	f.hs.Close()

	_, hs := f.start(func(s *Settings) { s.Initial = Config{} }) // a different seed is ignored
	r := doURL(t, hs.URL, "GET", "/v1/keys/k7", readTok, nil)
	if r.obj(t)["tier"] != "gold" {
		t.Fatalf("after restart: %s", r.body)
	}
	if r := doURL(t, hs.URL, "GET", "/v1/tiers/gold", readTok, nil); r.etag() != tag {
		t.Fatalf("ETag %q after restart, was %q", r.etag(), tag)
	}
	if v := f.snapshot().Version; v != 3 {
		t.Fatalf("version %d, want 3", v)
	}
}

// A stored document that fails to decode or validate is reported and the
// last good one is served; the next write replaces it.
func TestBadStoredConfigKeepsLastGood(t *testing.T) {
	f := newFixture(t)
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":42,"period":"1s"}`, "If-Match", "*"), 200)
	good := f.raw()
	ctx := context.Background()
	for _, bad := range []string{
		"garbage",
		`{"version":9,"config":{"tiers":{"free":{"rate":-1,"period":"1s"}}}}`,
		`{"version":9,"config":{"tiers":{}},"extra":1}`,
		`{"version":0,"config":{}}`,
	} {
		f.set([]byte(bad))
		s, err := Load(ctx, f.store, nil)
		if !errors.Is(err, ErrBadStored) || s.Config.Tiers["free"].Rate != 42 {
			t.Fatalf("%s: Load = v%d %v", bad, s.Version, err)
		}
		r := f.do("GET", "/v1/tiers/free", readTok, nil)
		if r.obj(t)["rate"] != 42.0 {
			t.Fatalf("%s: served %s", bad, r.body)
		}
		// A restart reports it and still serves the last good one.
		_, hs := f.start()
		if r := doURL(t, hs.URL, "GET", "/v1/tiers/free", readTok, nil); r.obj(t)["rate"] != 42.0 {
			t.Fatalf("%s: after restart %s", bad, r.body)
		}
	}
	// A hook failing on the stored document counts as bad too.
	f.set(good)
	if _, err := Load(ctx, f.store, func(Config) error { return errors.New("no") }); !errors.Is(err, ErrBadStored) {
		t.Fatalf("hook refusal: %v", err)
	}
	f.set([]byte("garbage"))
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":43,"period":"1s"}`, "If-Match", "*"), 200)
	if s := f.snapshot(); s.Config.Tiers["free"].Rate != 43 || s.Version != 3 {
		t.Fatalf("write over garbage: %+v", s)
	}
}

// Without Redis the Server runs on a MemoryStore with the same behaviour.
func TestMemoryServer(t *testing.T) {
	srv, err := New(context.Background(), Settings{Tokens: testTokens(), Initial: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t}
	f.hs = newHTTPTest(t, srv)
	tag := f.do("GET", "/v1/tiers/free", readTok, nil).etag()
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":3,"period":"1s"}`), 428)
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":3,"period":"1s"}`, "If-Match", tag), 200)
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":4,"period":"1s"}`, "If-Match", tag), 412)
	if s, _ := srv.Snapshot(context.Background()); s.Config.Tiers["free"].Rate != 3 || s.Version != 2 {
		t.Fatalf("%+v", s)
	}
}

func TestInvalidInitial(t *testing.T) {
	bad := testConfig()
	bad.DefaultTier = "nope"
	_, err := New(context.Background(), Settings{Tokens: testTokens(), Initial: bad})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "default_tier" {
		t.Fatalf("%v", err)
	}
}
