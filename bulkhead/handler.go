package bulkhead

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// DeadlineError is why a breaker gave up on a call: no response headers
// within its Settings.Deadline. Serve ends the handler's context with it
// as the cause (context.Cause), and RoundTrip returns it. It wraps
// context.DeadlineExceeded, so it is a timeout (a net.Error whose Timeout
// is true): a reverse proxy's error handler that answers 504 to a timeout
// answers 504 to it.
type DeadlineError struct {
	Breaker  string        // the breaker's name
	Deadline time.Duration // its Settings.Deadline
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("bulkhead: breaker %q: no response headers within %v", e.Breaker, e.Deadline)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *DeadlineError) Unwrap() error { return context.DeadlineExceeded }

// Timeout reports true: the call timed out.
func (e *DeadlineError) Timeout() bool { return true }

// Serve calls next under the breaker: the handler-level twin of RoundTrip,
// for an in-process handler or a whole reverse proxy. It counts as a
// failure an answer of status 5xx and an answer whose headers do not come
// within Settings.Deadline: at the deadline it ends the context of the
// request next is given, with a *DeadlineError as its cause (see
// context.Cause), and the answer next writes then (a proxy's 504, say)
// still goes to the client. A request whose own context ended (the client
// went away) counts neither way. A connection taken over by Hijack (an
// upgrade) is an answer, a success when in time. A panic before the
// headers is a failure.
//
// Serve writes nothing itself. It returns nil when it called next; else
// ErrOpen when the breaker refuses (open, or half-open with its probes in
// flight) or the context's error when r's context already ended, without
// calling next: the caller answers (503, Retry-After from RetryAfter).
//
// The deadline bounds the headers only; the body then streams for as long
// as r's context allows. The writer next gets passes Flush and Hijack on,
// and Unwrap gives the one it wraps (http.ResponseController).
func (b *Breaker) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) error {
	parent := r.Context()
	if err := parent.Err(); err != nil {
		return err
	}
	done, err := b.cb.Allow()
	if err != nil {
		return ErrOpen
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	aw := answerWriters.Get().(*answerWriter)
	aw.start(w, b, cancel)
	defer func() { // also when next panics: a failure unless answered in time
		if !aw.answered {
			aw.late = !aw.timer.Stop()
		}
		done(aw.outcome(parent))
		if !aw.late { // the timer is stopped before it fired: aw is free
			aw.w, aw.b, aw.cancel = nil, nil, nil
			answerWriters.Put(aw)
		}
	}()
	next.ServeHTTP(aw, r.WithContext(ctx))
	aw.answer(http.StatusOK) // no headers written: net/http sends a 200
	return nil
}

var answerWriters = sync.Pool{New: func() any { return new(answerWriter) }}

// answerWriter watches the answer of a handler that Serve calls: its
// status, and whether its headers came within the deadline.
type answerWriter struct {
	w        http.ResponseWriter
	b        *Breaker
	cancel   context.CancelCauseFunc
	timer    *time.Timer
	status   int  // of the answer; 0 until its headers are written
	late     bool // the deadline passed before the headers
	answered bool
}

// start readies a for a call through b, its timer set to b's deadline
// (made once per pooled writer, and reset for each call after).
func (a *answerWriter) start(w http.ResponseWriter, b *Breaker, cancel context.CancelCauseFunc) {
	a.w, a.b, a.cancel = w, b, cancel
	a.status, a.late, a.answered = 0, false, false
	if a.timer == nil {
		a.timer = time.AfterFunc(b.s.Deadline, a.expire)
		return
	}
	a.timer.Reset(b.s.Deadline)
}

// expire runs on the timer's goroutine at the deadline.
func (a *answerWriter) expire() {
	a.cancel(&DeadlineError{Breaker: a.b.name, Deadline: a.b.s.Deadline})
}

// answer notes the answer's status when its headers go out: the first
// final status (1xx other than 101 are informational and pass).
func (a *answerWriter) answer(status int) {
	if a.answered || status < 200 && status != http.StatusSwitchingProtocols {
		return
	}
	a.answered, a.status = true, status
	a.late = !a.timer.Stop()
}

// outcome is the call's result for gobreaker.
func (a *answerWriter) outcome(parent context.Context) error {
	switch {
	case parent.Err() != nil:
		return errExcluded
	case !a.answered || a.late || a.status >= 500:
		return errFailure
	}
	return nil
}

func (a *answerWriter) Header() http.Header { return a.w.Header() }

func (a *answerWriter) WriteHeader(status int) {
	a.answer(status)
	a.w.WriteHeader(status)
}

func (a *answerWriter) Write(p []byte) (int, error) {
	a.answer(http.StatusOK)
	return a.w.Write(p)
}

// Flush sends the headers (200 unless written) and what is buffered.
func (a *answerWriter) Flush() {
	a.answer(http.StatusOK)
	_ = http.NewResponseController(a.w).Flush()
}

// Hijack hands the connection to the handler: an answer (101) in time.
func (a *answerWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	a.answer(http.StatusSwitchingProtocols)
	return http.NewResponseController(a.w).Hijack()
}

// Unwrap is the writer Serve was given, for http.ResponseController.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.w }
