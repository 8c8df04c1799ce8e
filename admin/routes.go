package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// route is one method of one path of the API.
type route struct {
	method, path string
	h            echo.HandlerFunc
}

// methods are those a path that does not serve them answers with 405.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace}

func (sv *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = sv.handleError
	e.Use(sv.metrics.middleware, recoverPanic)
	g := e.Group("/v1", sv.auth.middleware, sv.readOnly)
	table := []route{
		{"GET", "/tiers", sv.listTiers}, {"POST", "/tiers", sv.createTier},
		{"GET", "/tiers/:name", sv.getTier}, {"PUT", "/tiers/:name", sv.replaceTier}, {"DELETE", "/tiers/:name", sv.deleteTier},
		{"GET", "/keys", sv.listKeys},
		{"GET", "/keys/:key", sv.getKey}, {"PUT", "/keys/:key", sv.assignKey}, {"DELETE", "/keys/:key", sv.unassignKey},
		{"GET", "/rules", sv.getRules}, {"PUT", "/rules", sv.putRules},
		{"GET", "/multipliers", sv.listMultipliers},
		{"GET", "/multipliers/:tier/pin", sv.getPin}, {"POST", "/multipliers/:tier/pin", sv.putPin},
		{"PUT", "/multipliers/:tier/pin", sv.putPin}, {"DELETE", "/multipliers/:tier/pin", sv.deletePin},
		{"GET", "/audit", sv.getAudit},
		{"GET", "/top", sv.getTop},
		{"GET", "/openapi.json", sv.getOpenAPI},
	}
	allowed := map[string][]string{}
	var paths []string
	for _, r := range table {
		g.Add(r.method, r.path, r.h)
		if allowed[r.path] == nil {
			paths = append(paths, r.path)
		}
		allowed[r.path] = append(allowed[r.path], r.method)
	}
	// Echo answers a known path's other methods with the group's catch-all
	// 404; each path says 405 and what it allows instead, after the
	// group's authentication.
	for _, p := range paths {
		ok := allowed[p]
		slices.Sort(ok)
		other := slices.DeleteFunc(slices.Clone(methods), func(m string) bool { return slices.Contains(ok, m) })
		g.Match(other, p, methodNotAllowed(strings.Join(ok, ", ")))
	}
	return e
}

// methodNotAllowed answers 405 with the Allow header.
func methodNotAllowed(allow string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Allow", allow)
		return httpErr(http.StatusMethodNotAllowed, "",
			"method "+c.Request().Method+" not allowed on "+c.Request().URL.Path+"; allowed: "+allow)
	}
}
