package admin

import (
	"context"
	"errors"
	"testing"

	"github.com/throttledhq/throttled/policy"
)

// The configuration survives a restart: a new Server on the same Redis
// serves what the old one wrote, and does not reseed.
func TestPersistenceAcrossRestart(t *testing.T) {
	f := newFixture(t)
	want(t, f.do("POST", "/v1/tiers", writeTok, `{"name":"gold","rate":5,"period":"1s"}`), 201)
	want(t, f.do("PUT", "/v1/keys/k7", writeTok, `{"tier":"gold"}`), 201)
	tag := f.do("GET", "/v1/tiers/gold", readTok, nil).etag()
	f.hs.Close()

	_, hs := f.start(func(s *Settings) { s.Initial = policy.Config{} }) // a different seed is ignored
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
	ctx := context.Background()
	for _, bad := range []string{
		"garbage",
		`{"version":9,"config":{"tiers":{"free":{"rate":-1,"period":"1s"}}}}`,
		`{"version":9,"config":{"tiers":{}},"extra":1}`,
		`{"version":0,"config":{}}`,
		// valid field by field, but not as a compiled policy
		`{"version":9,"config":{"tiers":{"free":{"rate":20000,"period":"1s","algorithm":"sliding_window_log"}}}}`,
	} {
		f.set([]byte(bad))
		s, err := policy.Load(ctx, f.store)
		if !errors.Is(err, policy.ErrBadStored) || s.Config.Tiers["free"].Rate != 42 {
			t.Fatalf("%s: policy.Load = v%d %v", bad, s.Version, err)
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
	var fe *policy.FieldError
	if !errors.As(err, &fe) || fe.Field != "default_tier" {
		t.Fatalf("%v", err)
	}
}
