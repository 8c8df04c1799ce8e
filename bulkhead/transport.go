package bulkhead

import (
	"context"
	"io"
	"net/http"
	"time"
)

// RoundTripper returns an http.RoundTripper for a reverse proxy that sends
// each request through the breaker of its upstream route: route(req) names
// it, and s creates it on first use. A route's breaker counts as failures
// transport errors, 5xx responses and responses whose headers do not arrive
// within Settings.Deadline; an open breaker answers ErrOpen without calling
// next. A nil next means http.DefaultTransport.
func (s *BreakerSet) RoundTripper(next http.RoundTripper, route func(*http.Request) string) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &breakerTransport{next: next, set: s, route: route}
}

type breakerTransport struct {
	next  http.RoundTripper
	set   *BreakerSet
	route func(*http.Request) string
}

func (t *breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := t.set.Get(t.route(req))
	if err != nil {
		return nil, err
	}
	return b.RoundTrip(t.next, req)
}

// RoundTrip sends req through next under the breaker: see
// BreakerSet.RoundTripper. The deadline bounds the wait for the response
// headers only (past it, the error is a *DeadlineError); the body then
// streams for as long as req's context allows. Serve is the same for a
// handler.
func (b *Breaker) RoundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	parent := req.Context()
	if err := parent.Err(); err != nil {
		return nil, err
	}
	done, err := b.cb.Allow()
	if err != nil {
		return nil, ErrOpen
	}
	ctx, cancel := context.WithCancel(parent)
	timer := time.AfterFunc(b.s.Deadline, cancel)
	resp, err := next.RoundTrip(req.WithContext(ctx))
	late := !timer.Stop() // the deadline passed: ctx is, or is about to be, cancelled
	switch {
	case parent.Err() != nil:
		done(errExcluded)
	case late || err != nil || resp.StatusCode >= 500:
		done(errFailure)
	default:
		done(nil)
	}
	if late {
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		if perr := parent.Err(); perr != nil {
			return nil, perr
		}
		return nil, &DeadlineError{Breaker: b.name, Deadline: b.s.Deadline}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends the request's context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
