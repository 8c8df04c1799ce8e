package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// limitBody bounds r's body to limit bytes. A body past it cancels the
// request's context with the *http.MaxBytesError as the cause, so that the
// upstream call stops and the route's breaker does not count it; the error
// handler then answers 413. Call release when the request is over. A
// request without a body allocates nothing.
func limitBody(w http.ResponseWriter, r *http.Request, limit int64) (_ *http.Request, release func()) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, noRelease
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	r = r.WithContext(ctx)
	r.Body = &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), cancel: cancel}
	return r, func() { cancel(nil) }
}

func noRelease() {}

type limitedBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		b.cancel(tooBig)
	}
	return n, err
}

// refuseBody answers 413 to a body larger than limit.
func refuseBody(w http.ResponseWriter, limit int64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write([]byte(`{"error":"request body larger than max_body_bytes","reason":"body_too_large","max_body_bytes":` +
		strconv.FormatInt(limit, 10) + "}\n"))
}
