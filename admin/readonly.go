package admin

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Resource kinds, as Settings.ReadOnly is asked about them: the first
// segment of the policy.Snapshot.Revisions keys.
const (
	KindTiers = "tiers" // /v1/tiers…: Config.Tiers
	KindKeys  = "keys"  // /v1/keys/{key}: Config.Assignments
	KindRules = "rules" // /v1/rules: Config.Rules
	KindPins  = "pins"  // /v1/multipliers/{tier}/pin: policy.Snapshot.Pins
)

// readOnly refuses, with 409, the writes (POST, PUT and DELETE; a method
// no route serves gets its 405) that Settings.ReadOnly refuses for their kind of resource.
// It runs after authentication, so that only callers with a write token
// learn why.
func (sv *Server) readOnly(next echo.HandlerFunc) echo.HandlerFunc {
	if sv.s.ReadOnly == nil {
		return next
	}
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodPost, http.MethodPut, http.MethodDelete:
		default: // reads, and methods no route serves (405)
			return next(c)
		}
		kind := kindOf(c.Path())
		if kind == "" {
			return next(c)
		}
		if err := sv.s.ReadOnly(kind); err != nil {
			return httpErr(http.StatusConflict, "", strings.TrimPrefix(err.Error(), "admin: "))
		}
		return next(c)
	}
}

// kindOf maps a route ("/v1/tiers/:name") to the kind of resource its
// writes change ("tiers"); "" for routes that change none.
func kindOf(route string) string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(route, "/v1/"), "/")
	switch seg {
	case KindTiers, KindKeys, KindRules:
		return seg
	case "multipliers":
		return KindPins
	}
	return ""
}
