package bulkhead

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a real HTTP server on 127.0.0.1 whose answer the test sets:
// a status code, or "slow" (headers only once the client gives up).
type upstream struct {
	srv    *httptest.Server
	hits   atomic.Int64
	status atomic.Int64 // 0 = slow
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.status.Store(http.StatusOK)
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		code := int(u.status.Load())
		if code == 0 {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "body of "+r.URL.Path)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func proxyClient(t *testing.T, s BreakerSettings) (*http.Client, *BreakerSet) {
	t.Helper()
	set, err := NewBreakerSet(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	route := func(r *http.Request) string { return strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0] }
	return &http.Client{Transport: set.RoundTripper(nil, route)}, set
}

func get(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestRoundTripperTripsOn5xxPerRoute(t *testing.T) {
	u := newUpstream(t)
	c, set := proxyClient(t, BreakerSettings{ConsecutiveFailures: 2, OpenTimeout: time.Hour, Deadline: 5 * time.Second})
	code, body, err := get(c, u.srv.URL+"/a/x")
	if err != nil || code != 200 || body != "body of /a/x" {
		t.Fatalf("healthy: %d %q %v", code, body, err)
	}
	u.status.Store(http.StatusBadGateway)
	for range 2 {
		if code, _, err := get(c, u.srv.URL+"/a/x"); err != nil || code != 502 {
			t.Fatalf("5xx passes through while closed: %d %v", code, err)
		}
	}
	if st := set.States(); st["a"] != StateOpen {
		t.Fatalf("states %v, want a open", st)
	}
	hits := u.hits.Load()
	if _, _, err := get(c, u.srv.URL+"/a/x"); !errors.Is(err, ErrOpen) {
		t.Fatalf("open route: err = %v, want ErrOpen", err)
	}
	if u.hits.Load() != hits {
		t.Fatal("an open breaker sent the request upstream")
	}
	// Another route has its own breaker; 4xx is the client's fault, not a failure.
	u.status.Store(http.StatusNotFound)
	for range 3 {
		if code, _, err := get(c, u.srv.URL+"/b/y"); err != nil || code != 404 {
			t.Fatalf("route b: %d %v", code, err)
		}
	}
	if st := set.States(); st["b"] != StateClosed || st["a"] != StateOpen {
		t.Fatalf("states %v, want a open, b closed", st)
	}
}

func TestRoundTripperTripsOnSlowHeaders(t *testing.T) {
	u := newUpstream(t)
	u.status.Store(0)
	c, set := proxyClient(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: 10 * time.Millisecond})
	_, _, err := get(c, u.srv.URL+"/slow")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `breaker "slow": no response headers within 10ms`) {
		t.Fatalf("err = %v, want a deadline error naming the route", err)
	}
	if st := set.States(); st["slow"] != StateOpen {
		t.Fatalf("states %v, want slow open", st)
	}
}

func TestRoundTripperBodyOutlivesDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "head,")
		w.(http.Flusher).Flush()
		<-release // the rest of the body comes after the deadline
		_, _ = io.WriteString(w, "tail")
	}))
	defer srv.Close()
	const deadline = 100 * time.Millisecond
	c, set := proxyClient(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: deadline})
	resp, err := c.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(deadline + 50*time.Millisecond) // let the deadline pass mid-body
	close(release)
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "head,tail" {
		t.Fatalf("body %q, err %v: the deadline must bound the headers only", body, err)
	}
	if st := set.States(); st["stream"] != StateClosed {
		t.Fatalf("states %v", st)
	}
}

func TestRoundTripperRejectsEmptyRoute(t *testing.T) {
	set, err := NewBreakerSet(BreakerSettings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := set.RoundTripper(nil, func(*http.Request) string { return "" })
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "name must not be empty") {
		t.Fatalf("err = %v", err)
	}
}
