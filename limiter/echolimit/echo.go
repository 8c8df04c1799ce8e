package echolimit

import (
	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// EchoMiddleware enforces e on every request (Echo v4 adapter). The client
// IP comes from e's Identifier, never from Echo's RealIP, which trusts
// X-Forwarded-For and X-Real-IP from anyone.
func Middleware(e *enforce.Enforcer) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			res := e.Check(r.Context(), r)
			res.WriteHeaders(c.Response().Header())
			if !res.Allowed {
				return c.JSONBlob(res.Status, res.Body())
			}
			return next(c)
		}
	}
}
