package enforce_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/enforce"
)

var errRefused = errors.New("redis: connection refused")

func checkWith(err error) func(context.Context) error {
	return func(context.Context) error { return err }
}

// TestReadinessAnswers: ready while the instance can decide (shared, or the
// fallback); degraded and strict say when the fallback decides.
func TestReadinessAnswers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          error
		fallback     bool
		query        string
		code         int
		status       string
		degraded     bool
		wantDegraded bool // Degraded() after the request
	}{
		{"shared", nil, true, "", 200, "ready", false, false},
		{"shared strict", nil, true, "?strict=1", 200, "ready", false, false},
		{"fallback decides", errRefused, true, "", 200, "ready", true, true},
		{"fallback decides strict", errRefused, true, "?strict=1", 503, "not ready", true, true},
		{"fallback decides strict=true", errRefused, true, "?strict=true", 503, "not ready", true, true},
		{"fallback decides strict=0", errRefused, true, "?strict=0", 200, "ready", true, true},
		{"no fallback", errRefused, false, "", 503, "not ready", false, false},
		{"no fallback, up", nil, false, "", 200, "ready", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := enforce.NewReadiness(enforce.ReadinessSettings{Shared: checkWith(tc.err), Fallback: tc.fallback})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest("GET", "/readyz"+tc.query, nil))
			var b struct {
				Status   string
				Degraded *bool
				Error    string
			}
			if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if w.Code != tc.code || b.Status != tc.status || b.Degraded == nil || *b.Degraded != tc.degraded ||
				(b.Error != "") != (tc.err != nil) {
				t.Errorf("got %d %s, want %d status %q degraded %v", w.Code, w.Body, tc.code, tc.status, tc.degraded)
			}
			if r.Degraded() != tc.wantDegraded {
				t.Errorf("Degraded() = %v, want %v", r.Degraded(), tc.wantDegraded)
			}
		})
	}
}

// TestReadinessRecovers: Degraded follows the shared store down and back.
func TestReadinessRecovers(t *testing.T) {
	var down bool
	r, err := enforce.NewReadiness(enforce.ReadinessSettings{Fallback: true,
		Shared: func(context.Context) error {
			if down {
				return errRefused
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false} {
		down = want
		if ready, _ := r.Check(context.Background()); !ready || r.Degraded() != want {
			t.Errorf("step %d: ready %v, Degraded %v; want ready, degraded %v", i, ready, r.Degraded(), want)
		}
	}
}

// A check that never returns is cut at the timeout: degraded, still ready.
func TestReadinessTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	r, err := enforce.NewReadiness(enforce.ReadinessSettings{Fallback: true, Timeout: 20 * time.Millisecond,
		Shared: func(context.Context) error { <-block; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := r.Check(context.Background())
	if !ready || !errors.Is(err, enforce.ErrNotReady) || !r.Degraded() {
		t.Errorf("Check: ready %v, err %v, degraded %v; want ready, ErrNotReady, degraded", ready, err, r.Degraded())
	}
}

func TestReadinessRun(t *testing.T) {
	var calls atomic.Int64
	r, err := enforce.NewReadiness(enforce.ReadinessSettings{Fallback: true, Interval: time.Millisecond,
		Shared: func(context.Context) error { calls.Add(1); return errRefused }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || !r.Degraded() {
		t.Errorf("Run: %v, Degraded %v; want nil, true after failing checks", err, r.Degraded())
	}
}

func TestReadinessBadSettings(t *testing.T) {
	for name, s := range map[string]enforce.ReadinessSettings{
		"nil shared":        {},
		"negative timeout":  {Shared: checkWith(nil), Timeout: -time.Second},
		"negative interval": {Shared: checkWith(nil), Interval: -time.Second},
	} {
		if _, err := enforce.NewReadiness(s); !errors.Is(err, enforce.ErrBadReadiness) {
			t.Errorf("%s: %v, want ErrBadReadiness", name, err)
		}
	}
}

func TestReadinessMethods(t *testing.T) {
	r, err := enforce.NewReadiness(enforce.ReadinessSettings{Shared: checkWith(nil)})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/readyz", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", w.Code)
	}
}

// With a fallback, a Redis outage leaves the instance ready but degraded;
// ?strict=1 fails then.
func ExampleReadiness() {
	r, _ := enforce.NewReadiness(enforce.ReadinessSettings{Shared: checkWith(errRefused), Fallback: true})
	for _, url := range []string{"/readyz", "/readyz?strict=1"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
		fmt.Print(w.Code, " ", w.Body)
	}
	// Output:
	// 200 {"status":"ready","degraded":true,"error":"redis: connection refused"}
	// 503 {"status":"not ready","degraded":true,"error":"redis: connection refused"}
}
