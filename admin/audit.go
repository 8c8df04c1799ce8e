package admin

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// DefaultAuditPage is how many entries GET /v1/audit returns without ?limit.
const DefaultAuditPage = 100

type auditList struct {
	Entries []json.RawMessage `json:"entries"`
}

// getAudit lists the newest audit entries first; ?limit=N (1..1000).
func (sv *Server) getAudit(c echo.Context) error {
	n := DefaultAuditPage
	if q := c.QueryParam("limit"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 || v > policy.DefaultAuditLimit {
			return fieldErr("limit", "%q: want an integer in 1..%d", clip([]byte(q)), policy.DefaultAuditLimit)
		}
		n = v
	}
	raw, err := sv.s.Store.Audit(c.Request().Context(), n)
	if err != nil {
		sv.s.Logger.Error("admin: read audit log", "err", err)
		return httpErr(http.StatusServiceUnavailable, "", "audit log unavailable")
	}
	list := auditList{Entries: make([]json.RawMessage, 0, len(raw))}
	for _, e := range raw {
		if json.Valid(e) {
			list.Entries = append(list.Entries, e)
		}
	}
	return respond(c, http.StatusOK, etagOf(list, 0), list)
}
