package echolimit

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// Middleware runs p, the whole request pipeline, around Echo's handlers
// (Echo v4 adapter): the same stages, answers and headers as
// p.Handler gives a net/http handler. Refusals are written through Echo's
// Response, so that Echo's hooks and the middlewares before this one see
// them. An error the handler returns goes through Echo's HTTPErrorHandler
// here, within the pipeline, so that the breaker counts the status finally
// written and the rate-limit headers go on that answer; the middleware then
// returns nil.
//
// The client IP is the one p's Enforcer identifies, never Echo's RealIP,
// which trusts X-Forwarded-For and X-Real-IP from anyone.
func Middleware(p *pipeline.Pipeline) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			f := fronts.Get().(*front)
			f.ResponseWriter, f.c, f.next = c.Response(), c, next
			p.Serve(f, c.Request(), f)
			*f = front{}
			fronts.Put(f)
			return nil
		}
	}
}

var fronts = sync.Pool{New: func() any { return new(front) }}

// front is one request's way between Echo and the pipeline: the writer the
// pipeline answers on, and its next. The pipeline's refusals go to Echo's
// Response. The handler writes through Echo's Response too, under which
// the pipeline's writer (over this one) is put meanwhile, this one then
// writing to the writer that was under Echo's Response.
type front struct {
	http.ResponseWriter // Echo's Response; the writer under it while the handler runs
	c                   echo.Context
	next                echo.HandlerFunc
}

// Unwrap is the writer f writes to, for http.ResponseController.
func (f *front) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := f.c
	if w != http.ResponseWriter(f) { // the pipeline's writer over f
		resp := c.Response()
		under := resp.Writer
		f.ResponseWriter, resp.Writer = under, w
		defer func() { resp.Writer, f.ResponseWriter = under, resp }()
	}
	if req := c.Request(); r != req { // the breaker's deadline
		c.SetRequest(r)
		defer c.SetRequest(req)
	}
	if err := f.next(c); err != nil {
		c.Error(err)
	}
}
