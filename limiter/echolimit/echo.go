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
// Response, so that Echo's hooks and middlewares before this one see them.
// An error the handler returns goes through Echo's HTTPErrorHandler here,
// within the pipeline, so that the breaker counts the status finally
// written and the rate-limit headers go on that answer; the middleware then
// returns nil.
//
// The client IP is the one p's Enforcer identifies, never Echo's RealIP,
// which trusts X-Forwarded-For and X-Real-IP from anyone.
func Middleware(p *pipeline.Pipeline) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := handlers.Get().(*handler)
			h.c, h.next = c, next
			p.Serve(c.Response(), c.Request(), h)
			*h = handler{}
			handlers.Put(h)
			return nil
		}
	}
}

var handlers = sync.Pool{New: func() any { return new(handler) }}

// handler is Echo's next handler as the pipeline's next: it gives the
// handler the writer and request the pipeline hands on (as Echo's Response
// and Request), and puts back the originals after.
type handler struct {
	c    echo.Context
	next echo.HandlerFunc
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.c
	if resp := c.Response(); w != http.ResponseWriter(resp) {
		c.SetResponse(echo.NewResponse(w, c.Echo()))
		defer c.SetResponse(resp)
	}
	if req := c.Request(); r != req {
		c.SetRequest(r)
		defer c.SetRequest(req)
	}
	if err := h.next(c); err != nil {
		c.Error(err)
	}
}
