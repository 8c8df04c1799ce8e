package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

const (
	writeTok = "alice-write-0123456789"
	readTok  = "bob-read-0123456789ab"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testTokens() map[string]Token {
	return map[string]Token{
		"alice": {Token: writeTok, Role: RoleWrite},
		"bob":   {Token: readTok, Role: RoleRead},
	}
}

func sec(n int) policy.Duration { return policy.Duration(time.Duration(n) * time.Second) }

// testConfig is the configuration a fixture's store is seeded with, as the
// API shows it.
func testConfig() policy.Config {
	var c policy.Config
	err := json.Unmarshal([]byte(`{
		"tiers": {
			"free": {"rate": 10, "period": "1s", "burst": 20, "priority": 10, "beta": 0.5},
			"premium": {"rate": 100, "period": "1s", "priority": 1, "algorithm": "gcra", "beta": 0.9}
		},
		"rules": [{"name": "api", "match": {"path": "/api"}, "key": "api_key"}],
		"default_tier": "free",
		"assignments": {"k1": "premium"}
	}`), &c)
	if err != nil {
		panic(err)
	}
	return c
}

// fixture is a Server on a real redis-server, behind httptest.
type fixture struct {
	t     *testing.T
	redis *testenv.Redis
	rc    *redis.Client
	store *policy.RedisStore
	clock *fakeclock.Clock
	reg   *prometheus.Registry
	srv   *Server
	hs    *httptest.Server
}

func newFixture(t *testing.T, mods ...func(*Settings)) *fixture {
	t.Helper()
	rd := testenv.StartRedis(t)
	f := &fixture{t: t, redis: rd, rc: rd.Client(), clock: fakeclock.New(t0)}
	st, err := policy.NewRedisStore(f.rc, policy.StoreSettings{Prefix: "test:"})
	if err != nil {
		t.Fatal(err)
	}
	f.store = st
	f.srv, f.hs = f.start(mods...)
	return f
}

// start makes a new Server on the fixture's store (as after a restart).
func (f *fixture) start(mods ...func(*Settings)) (*Server, *httptest.Server) {
	f.t.Helper()
	f.reg = prometheus.NewRegistry()
	s := Settings{Store: f.store, Tokens: testTokens(), Initial: testConfig(),
		Registerer: f.reg, Now: f.clock.Now}
	for _, m := range mods {
		m(&s)
	}
	srv, err := New(context.Background(), s)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(srv)
	f.t.Cleanup(hs.Close)
	return srv, hs
}

type resp struct {
	code int
	hdr  http.Header
	body []byte
}

// obj decodes the body as a JSON object.
func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

func (r resp) etag() string { return r.hdr.Get("ETag") }

// do sends a request with token (none if ""), a body (string, []byte or a
// value to marshal, nil for none) and header pairs.
func (f *fixture) do(method, path, token string, body any, hdr ...string) resp {
	f.t.Helper()
	return doURL(f.t, f.hs.URL, method, path, token, body, hdr...)
}

func doURL(t *testing.T, base, method, path, token string, body any, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		rd = bytes.NewReader(mustJSON(b))
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{code: res.StatusCode, hdr: res.Header, body: b}
}

// want fails unless r has the status code.
func want(t *testing.T, r resp, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
}

// raw returns the stored document bytes, as the store holds them.
func (f *fixture) raw() []byte {
	f.t.Helper()
	cur, _, err := f.store.Get(context.Background())
	if err != nil || cur == nil {
		f.t.Fatalf("stored document %q: %v", cur, err)
	}
	return cur
}

// snapshot loads the stored configuration, failing on any error.
func (f *fixture) snapshot() policy.Snapshot {
	f.t.Helper()
	s, err := policy.Load(context.Background(), f.store)
	if err != nil {
		f.t.Fatalf("Load: %v", err)
	}
	return s
}

// mustJSON is v as JSON.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func newHTTPTest(t *testing.T, h http.Handler) *httptest.Server {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

// set writes the stored document straight into Redis, as an operator
// editing the key by hand would (no notification).
func (f *fixture) set(raw []byte) {
	f.t.Helper()
	if err := f.rc.Set(context.Background(), f.store.Key(), raw, 0).Err(); err != nil {
		f.t.Fatalf("SET %s: %v", f.store.Key(), err)
	}
}
