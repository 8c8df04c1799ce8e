package pipeline

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// call is one request's way through the pipeline, pooled: its decision,
// made in place in its own enforce.Pass (whose bucket keys' memory it
// keeps from one request to the next), the permits it holds, and the
// writer the handler answers through when the answer needs the rate-limit
// headers or its time (Settings.Answers), or its status (Settings.Requests).
type call struct {
	p       *Pipeline
	chk     enforce.Pass
	res     *enforce.Result    // chk's
	permits [3]bulkhead.Permit // tier bulkhead, route bulkhead, gate
	n       int                // permits held
	start   time.Time          // when it asked the gate (or reached the handler)
	called  time.Time          // when it reached the handler
	w       http.ResponseWriter
	wrote   bool // the answer's headers are out
	status  int  // the answer's status, once wrote
}

// keep holds pm until the call is done.
func (c *call) keep(pm bulkhead.Permit) {
	c.permits[c.n] = pm
	c.n++
}

// done releases the permits, the last taken first, and puts c back, its
// decision's Pass kept for the next request (CheckIn empties it).
func (c *call) done() {
	for i := c.n - 1; i >= 0; i-- {
		c.permits[i].Release()
		c.permits[i] = bulkhead.Permit{}
	}
	c.n, c.start, c.called, c.w, c.wrote, c.status = 0, time.Time{}, time.Time{}, nil, false, 0
	c.p.calls.Put(c)
}

// answer puts the rate-limit headers on the answer, in place of any the
// handler set under their names, and tells Settings.Answers of it, as its
// headers go out with status; or after a handler that wrote nothing, whose
// 200 net/http sends with the header map as it is then.
func (c *call) answer(status int) {
	if c.wrote || c.w == nil {
		return
	}
	c.wrote, c.status = true, status
	c.res.WriteHeaders(c.w.Header())
	if a := c.p.s.Answers; a != nil {
		now := time.Now()
		a.Answered(status, now.Sub(c.start), now.Sub(c.called))
	}
}

func (c *call) Header() http.Header { return c.w.Header() }

// WriteHeader answers with status; interim 1xx answers (other than 101)
// pass as they are.
func (c *call) WriteHeader(status int) {
	if status >= 200 || status == http.StatusSwitchingProtocols {
		c.answer(status)
	}
	c.w.WriteHeader(status)
}

// WriteString passes s on as it is (io.StringWriter), as net/http's
// writer takes it: io.WriteString through a writer without it copies s
// into a new []byte.
func (c *call) WriteString(s string) (int, error) {
	c.answer(http.StatusOK)
	return io.WriteString(c.w, s)
}

func (c *call) Write(b []byte) (int, error) {
	c.answer(http.StatusOK)
	return c.w.Write(b)
}

// Flush sends the headers (200 unless written) and what is buffered.
func (c *call) Flush() {
	c.answer(http.StatusOK)
	_ = http.NewResponseController(c.w).Flush()
}

// Hijack hands the connection to the handler, which writes its answer
// (an upgrade's 101) with the header map as it is then.
func (c *call) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c.answer(http.StatusSwitchingProtocols)
	return http.NewResponseController(c.w).Hijack()
}

// Unwrap is the writer the pipeline was given, for http.ResponseController.
func (c *call) Unwrap() http.ResponseWriter { return c.w }

// ResultOf is the Enforcer's decision whose rate-limit headers the
// pipeline puts on the answer that w (the writer the pipeline gave a
// handler, or one that wraps it and has Unwrap) writes: its tier, rule and
// headers. It is nil when no rule applied, or when the decision puts none
// there (an admitted request whose rule's headers are none or hidden): the
// pipeline then gives the handler the server's writer itself, unless it
// needs the answer's status or time (Settings.Requests, Settings.Answers).
// It is the pipeline's until Serve returns: copy what you keep.
func ResultOf(w http.ResponseWriter) *enforce.Result {
	for {
		switch t := w.(type) {
		case *call:
			if !t.res.Limited || t.res.Hidden && t.res.Allowed {
				return nil
			}
			return t.res
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}
