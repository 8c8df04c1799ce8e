package bulkhead

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func routeBreaker(t *testing.T, s BreakerSettings) *Breaker {
	t.Helper()
	b, err := NewBreaker("upstream:/x", s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// status is a handler that answers code.
func status(code int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) })
}

// serve runs one request through b.Serve and returns Serve's error and the
// recorded answer.
func serve(b *Breaker, next http.Handler) (*httptest.ResponseRecorder, error) {
	rec := httptest.NewRecorder()
	err := b.Serve(rec, httptest.NewRequest(http.MethodGet, "/x", nil), next)
	return rec, err
}

func TestServeTripsOn5xxNotOn4xx(t *testing.T) {
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 2, OpenTimeout: time.Hour, Deadline: 5 * time.Second})
	for range 3 { // the client's fault: no failure
		if rec, err := serve(b, status(http.StatusNotFound)); err != nil || rec.Code != 404 {
			t.Fatalf("4xx: %v %d", err, rec.Code)
		}
	}
	for i := range 2 {
		if rec, err := serve(b, status(http.StatusInternalServerError)); err != nil || rec.Code != 500 {
			t.Fatalf("5xx %d passes through while closed: %v %d", i, err, rec.Code)
		}
	}
	if b.State() != StateOpen {
		t.Fatalf("state %v after 2 consecutive 500s, want open", b.State())
	}
	called := false
	rec, err := serve(b, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	if !errors.Is(err, ErrOpen) || called || rec.Code != 200 || rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Fatalf("open: err %v, next called %v, wrote %d %q: want ErrOpen, no call, nothing written", err, called, rec.Code, rec.Body)
	}
}

// A handler that writes nothing gets net/http's 200: a success. Interim
// 1xx answers are not the answer.
func TestServeCountsTheFinalStatus(t *testing.T) {
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: 5 * time.Second})
	if _, err := serve(b, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); err != nil || b.State() != StateClosed {
		t.Fatalf("no answer written: %v, state %v; want a success", err, b.State())
	}
	serve(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	if b.State() != StateOpen {
		t.Fatalf("103 then 503: state %v, want open", b.State())
	}
}

// No headers within the deadline: the handler's context ends with a
// *DeadlineError cause (a timeout, as a proxy's error handler tests it), its
// late answer goes out, and the call is a failure.
func TestServeTripsOnSlowHeaders(t *testing.T) {
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: 10 * time.Millisecond})
	var cause error
	rec, err := serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		cause = context.Cause(r.Context())
		w.WriteHeader(http.StatusGatewayTimeout)
	}))
	var de *DeadlineError
	var ne net.Error
	if err != nil || rec.Code != 504 || !errors.As(cause, &de) || de.Breaker != "upstream:/x" || de.Deadline != 10*time.Millisecond ||
		!errors.Is(cause, context.DeadlineExceeded) || !errors.As(cause, &ne) || !ne.Timeout() {
		t.Fatalf("slow: err %v, code %d, cause %v: want the handler's 504 and a *DeadlineError timeout as the cause", err, rec.Code, cause)
	}
	if cause.Error() != `bulkhead: breaker "upstream:/x": no response headers within 10ms` {
		t.Errorf("cause %q", cause)
	}
	if b.State() != StateOpen {
		t.Fatalf("state %v, want open", b.State())
	}
}

// The deadline bounds the headers only: a body that streams past it keeps
// its context, and the call is a success.
func TestServeBodyOutlivesDeadline(t *testing.T) {
	const deadline = 100 * time.Millisecond // long enough to answer within, under -race
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: deadline})
	rec, err := serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "head,")
		w.(http.Flusher).Flush()
		time.Sleep(3 * deadline) // well past the deadline
		if r.Context().Err() != nil {
			_, _ = io.WriteString(w, "cancelled")
			return
		}
		_, _ = io.WriteString(w, "tail")
	}))
	if err != nil || rec.Body.String() != "head,tail" || !rec.Flushed || b.State() != StateClosed {
		t.Fatalf("err %v, body %q, flushed %v, state %v", err, rec.Body, rec.Flushed, b.State())
	}
}

// A client that went away counts neither way; one already gone is not
// served.
func TestServeClientGoneCountsNeitherWay(t *testing.T) {
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(ctx)
	err := b.Serve(httptest.NewRecorder(), req, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		cancel() // the client goes away; the handler then fails
		w.WriteHeader(http.StatusBadGateway)
	}))
	if err != nil || b.State() != StateClosed {
		t.Fatalf("client gone mid-call: %v, state %v; want closed", err, b.State())
	}
	called := false
	err = b.Serve(httptest.NewRecorder(), req, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	if !errors.Is(err, context.Canceled) || called {
		t.Fatalf("client gone before: err %v, called %v; want context.Canceled and no call", err, called)
	}
}

// A panic before the headers is a failure, and goes on up.
func TestServePanicIsAFailure(t *testing.T) {
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: 5 * time.Second})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on up")
			}
		}()
		serve(b, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	}()
	if b.State() != StateOpen {
		t.Fatalf("state %v, want open", b.State())
	}
}

// hijackable is a recorder whose connection a handler can take over.
type hijackable struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (h *hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h.hijacked = true
	conn, _ := net.Pipe()
	return conn, bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn)), nil
}

// A hijacked connection (an upgrade) is an answer in time: the deadline
// no longer applies, and http.ResponseController reaches the connection
// through the breaker's writer.
func TestServeHijackIsAnAnswer(t *testing.T) {
	const deadline = 100 * time.Millisecond // long enough to answer within, under -race
	b := routeBreaker(t, BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, Deadline: deadline})
	w := &hijackable{ResponseRecorder: httptest.NewRecorder()}
	var alive bool
	err := b.Serve(w, httptest.NewRequest(http.MethodGet, "/x", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		time.Sleep(3 * deadline)
		alive = r.Context().Err() == nil
	}))
	if err != nil || !w.hijacked || !alive || b.State() != StateClosed {
		t.Fatalf("err %v, hijacked %v, context alive past the deadline %v, state %v", err, w.hijacked, alive, b.State())
	}
}
