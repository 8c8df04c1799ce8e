package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
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
		if err != nil || v < 1 || v > DefaultAuditLimit {
			return fieldErr("limit", "%q: want an integer in 1..%d", clip([]byte(q)), DefaultAuditLimit)
		}
		n = v
	}
	raw, err := sv.s.Store.Audit(c.Request().Context(), n)
	if err != nil {
		sv.s.Logger.Error("api: read audit log", "err", err)
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

// omitted stands in an audit entry for a before or after too large to keep.
type omitted struct {
	Omitted bool   `json:"omitted"`
	Bytes   int    `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// auditEntry is e's stored form, at most max bytes: when e is larger, its
// before and after are replaced by their sizes and digests.
func auditEntry(e AuditEntry, max int) []byte {
	b := canonical(e)
	if len(b) <= max {
		return b
	}
	for _, v := range []*json.RawMessage{&e.Before, &e.After} {
		sum := sha256.Sum256(*v)
		*v = canonical(omitted{Omitted: true, Bytes: len(*v), SHA256: hex.EncodeToString(sum[:])})
	}
	return canonical(e)
}
