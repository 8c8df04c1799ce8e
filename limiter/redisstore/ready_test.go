package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

var fbSeq atomic.Int64

func fbStore(c redis.UniversalClient) *redisstore.Store {
	return redisstore.New(c, limiter.WithPrefix(fmt.Sprintf("fb%d:", fbSeq.Add(1))))
}

// rdCall serves one probe request on h.
func rdCall(h http.Handler, method string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, "/", nil))
	return w
}

// rdBody decodes a /readyz body.
func rdBody(t *testing.T, w *httptest.ResponseRecorder) (status, errText string) {
	t.Helper()
	var b struct{ Status, Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("readyz body %q: %v", w.Body.String(), err)
	}
	return b.Status, b.Error
}

func TestReadyRedis(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.DeadlineClient(-1)
	prefix := fmt.Sprintf("rd%d:", fbSeq.Add(1))
	s := redisstore.New(c, limiter.WithPrefix(prefix))
	ctx := context.Background()
	for range 3 {
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready on a live redis: %v", err)
		}
	}
	// It made a real decision: the reserved key holds token bucket state.
	if b := s.Bucket(limiter.TokenBucket, "__ready__"); !c.HExists(ctx, b, "__ready__").Val() {
		t.Errorf("no field __ready__ in %s after Ready: no decision was made", b)
	}

	// Scripts refused while PING works: not ready.
	if err := c.Do(ctx, "ACL", "SETUSER", "default", "-@scripting").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after ACL change: %v", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, redisstore.ErrNotReady) || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("Ready without scripting: %v, want ErrNotReady with NOPERM", err)
	}
	if err := c.Do(ctx, "ACL", "SETUSER", "default", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready with scripting back: %v", err)
	}

	r.Kill()
	if err := s.Ready(ctx); !errors.Is(err, redisstore.ErrNotReady) {
		t.Errorf("Ready after Kill: %v, want ErrNotReady", err)
	}
}

// A paused server answers nothing: Ready fails at its context's deadline,
// well before go-redis's 5 s read timeout.
func TestReadyPausedRedis(t *testing.T) {
	r := testenv.StartRedis(t)
	s := redisstore.New(r.DeadlineClient(-1))
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Pause()
	defer r.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := s.Ready(ctx)
	if el := time.Since(begin); !errors.Is(err, redisstore.ErrNotReady) || el > 2*time.Second {
		t.Errorf("Ready on a paused redis: %v after %v, want ErrNotReady at the 200ms deadline", err, el)
	}

	// The handler bounds the check itself, even with a client that ignores
	// context deadlines.
	h := enforce.ReadyHandler(redisstore.New(r.Client()).Ready, 200*time.Millisecond)
	begin = time.Now()
	w := rdCall(h, http.MethodGet)
	st, msg := rdBody(t, w)
	if el := time.Since(begin); w.Code != http.StatusServiceUnavailable || st != "not ready" ||
		!strings.Contains(msg, "no answer within 200ms") || el > 2*time.Second {
		t.Errorf("/readyz on a paused redis: %d %q after %v, want 503 at the 200ms timeout", w.Code, w.Body, el)
	}
}

// /readyz follows Redis down and back; /healthz says ok throughout.
func TestReadyHandlers(t *testing.T) {
	r := testenv.StartRedis(t)
	s := redisstore.New(r.DeadlineClient(-1))
	ready, health := enforce.ReadyHandler(s.Ready, 0), enforce.HealthHandler()
	check := func(wantCode int, wantStatus string) {
		t.Helper()
		w := rdCall(ready, http.MethodGet)
		st, msg := rdBody(t, w)
		if w.Code != wantCode || st != wantStatus || (wantCode == 200) != (msg == "") ||
			w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("/readyz: %d %q (%s), want %d %q", w.Code, w.Body, w.Header().Get("Content-Type"), wantCode, wantStatus)
		}
		if w := rdCall(health, http.MethodGet); w.Code != 200 || w.Body.String() != "ok\n" {
			t.Errorf("/healthz: %d %q, want 200 ok", w.Code, w.Body)
		}
	}
	check(200, "ready")
	r.Kill()
	check(503, "not ready")
	r.Start()
	// The client reconnects on its next call.
	for i := 0; i < 50 && rdCall(ready, http.MethodGet).Code != 200; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	check(200, "ready")

	for _, h := range []http.Handler{ready, health} {
		if w := rdCall(h, http.MethodPost); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST: %d, Allow %q; want 405, GET, HEAD", w.Code, w.Header().Get("Allow"))
		}
	}
}

func TestReadyHandlerBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"nil func":         func() { enforce.ReadyHandler(nil, 0) },
		"negative timeout": func() { enforce.ReadyHandler(limiter.NewMemory().Ready, -time.Second) },
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "enforce: ReadyHandler") {
					t.Errorf("%s: panic %v, want one naming enforce: ReadyHandler", name, p)
				}
			}()
			f()
		}()
	}
}

// The in-memory store is always ready; a failing check is a 503 naming why.
func ExampleReadyHandler() {
	for _, check := range []func(context.Context) error{
		limiter.NewMemory().Ready,
		func(context.Context) error { return errors.New("redis: connection refused") },
	} {
		w := httptest.NewRecorder()
		enforce.ReadyHandler(check, time.Second).ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		fmt.Print(w.Code, " ", w.Body)
	}
	// Output:
	// 200 {"status":"ready"}
	// 503 {"status":"not ready","error":"redis: connection refused"}
}
