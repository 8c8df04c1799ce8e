package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
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

func sec(n int) Duration { return Duration(time.Duration(n) * time.Second) }

func testConfig() Config {
	return Config{
		Tiers: map[string]Tier{
			"free":    {Rate: 10, Period: sec(1), Burst: 20, Priority: 10, Beta: 0.5},
			"premium": {Rate: 100, Period: sec(1), Priority: 1, Algorithm: "gcra", Beta: 0.9},
		},
		Rules:       []Rule{{Name: "api", Match: Match{Path: "/api"}, Key: KeySources{"api_key"}}},
		DefaultTier: "free",
		Assignments: map[string]string{"k1": "premium"},
	}
}

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a Server on a real redis-server, behind httptest.
type fixture struct {
	t     *testing.T
	redis *testenv.Redis
	rc    *redis.Client
	store *RedisStore
	clock *clock
	reg   *prometheus.Registry
	srv   *Server
	hs    *httptest.Server
}

func newFixture(t *testing.T, mods ...func(*Settings)) *fixture {
	t.Helper()
	rd := testenv.StartRedis(t)
	f := &fixture{t: t, redis: rd, rc: rd.Client(), clock: &clock{t: t0}}
	st, err := NewRedisStore(f.rc, StoreSettings{Prefix: "test:"})
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
		rd = bytes.NewReader(canonical(b))
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

// raw returns the stored document bytes, straight from Redis.
func (f *fixture) raw() []byte {
	f.t.Helper()
	b, err := f.rc.Get(context.Background(), f.store.Key()).Bytes()
	if err != nil {
		f.t.Fatalf("GET %s: %v", f.store.Key(), err)
	}
	return b
}

// snapshot loads the stored configuration, failing on any error.
func (f *fixture) snapshot() Snapshot {
	f.t.Helper()
	s, err := Load(context.Background(), f.store, nil)
	if err != nil {
		f.t.Fatalf("Load: %v", err)
	}
	return s
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
