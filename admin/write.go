package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// write applies edit to the current configuration through
// policy.Doc.Update, as the authenticated token's name: its refusals are
// answered as they are (400 for validation), a reset store with 409, store
// failures and lost races with 503.
func (sv *Server) write(c echo.Context, edit policy.Edit) (policy.Snapshot, error) {
	who, _ := c.Get(ctxWho).(string)
	var before, after [2]string // the effective default and anonymous tiers
	watched := func(s *policy.Snapshot) (policy.Change, error) {
		before[0], before[1] = s.Config.EffectiveTiers()
		ch, err := edit(s)
		after[0], after[1] = s.Config.EffectiveTiers()
		return ch, err
	}
	snap, err := sv.doc.Update(c.Request().Context(), policy.Write{Who: who, Now: sv.s.Now,
		MaxAuditEntryBytes: sv.s.MaxAuditEntryBytes, OnConflict: sv.metrics.conflicts.Inc}, watched)
	if err == nil && before != after {
		sv.warnMove(c, &snap.Config, before, after)
	}
	switch {
	case errors.Is(err, policy.ErrStoreReset):
		sv.s.Logger.Error("admin: write refused: the config store was reset", "err", err)
		if sv.s.OnReset != nil {
			sv.s.OnReset(err)
		}
		return snap, httpErr(http.StatusConflict, "", strings.TrimPrefix(err.Error(), "policy: "))
	case errors.Is(err, policy.ErrUnavailable):
		sv.s.Logger.Error("admin: write config", "err", err)
		return snap, httpErr(http.StatusServiceUnavailable, "", "config store unavailable")
	case errors.Is(err, policy.ErrContended):
		return snap, httpErr(http.StatusServiceUnavailable, "", strings.TrimPrefix(err.Error(), "policy: "))
	}
	return snap, err
}

// warnMove tells the writer and the log that a write moved the clients
// without an assignment or the anonymous ones to another tier: a tier
// added or reprioritised while default_tier or anonymous_tier is not named
// does so silently otherwise. cfg is the configuration written.
func (sv *Server) warnMove(c echo.Context, cfg *policy.Config, before, after [2]string) {
	who := "unassigned and anonymous clients"
	switch {
	case before[0] == after[0]:
		who = "anonymous clients"
	case before[1] == after[1] || before[0] != before[1] || after[0] != after[1]:
		who = "unassigned clients"
	}
	from, to := before[0], after[0]
	if before[0] == after[0] {
		from, to = before[1], after[1]
	}
	msg := fmt.Sprintf("%s move from tier %s to %s", who, from, to)
	switch {
	case before[0] != after[0] && cfg.DefaultTier == "":
		msg += " (default_tier is not named: they take the lowest-priority tier)"
	case before[0] == after[0] && cfg.AnonymousTier == "":
		msg += " (anonymous_tier is not named: they take the default tier)"
	}
	c.Response().Header().Add("Warning", `299 throttled "`+msg+`"`)
	sv.s.Logger.Warn("admin: "+msg, "by", c.Get(ctxWho))
}

// etagOf is the strong ETag of a resource: a hash of its canonical JSON and
// the version that last wrote it, so it changes on every write (even one
// that restores earlier content) and on nothing else.
func etagOf(v any, rev int64) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("admin: cannot marshal %T: %v", v, err))
	}
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, rev, 10))
	return `"` + hex.EncodeToString(h.Sum(nil)[:12]) + `"`
}

// precondition checks If-Match against the resource's current ETag. A
// write to an existing resource needs If-Match (428 without it); a
// mismatch, or If-Match on an absent resource, is 412. "*" matches any
// existing resource.
func precondition(c echo.Context, etag string, exists bool) error {
	im := strings.TrimSpace(c.Request().Header.Get("If-Match"))
	if im == "" {
		if exists {
			return httpErr(http.StatusPreconditionRequired, "If-Match",
				"If-Match is required: GET the resource and send its ETag")
		}
		return nil
	}
	for _, tag := range strings.Split(im, ",") {
		tag = strings.TrimSpace(tag)
		if exists && (tag == "*" || tag == etag) {
			return nil
		}
	}
	if !exists {
		return httpErr(http.StatusPreconditionFailed, "If-Match", "the resource does not exist")
	}
	return httpErr(http.StatusPreconditionFailed, "If-Match",
		"the resource has changed: its ETag is now "+etag)
}

// respond writes v as JSON with an ETag header when etag is not empty.
func respond(c echo.Context, code int, etag string, v any) error {
	if etag != "" {
		c.Response().Header().Set("ETag", etag)
	}
	return c.JSON(code, v)
}

// body reads the request body and decodes it strictly into v; decoding
// errors name fields below prefix.
func (sv *Server) body(c echo.Context, v any, prefix func(b []byte) string) error {
	r := c.Request()
	if r.ContentLength > sv.s.MaxBodyBytes {
		return errTooLarge
	}
	b, err := readBody(r.Body, sv.s.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decodeStrict(b, v, prefix(b))
}

// at returns a fixed body prefix for sv.body.
func at(prefix string) func([]byte) string { return func([]byte) string { return prefix } }

// param returns the path parameter name, unescaped.
func param(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", httpErr(http.StatusBadRequest, name, fmt.Sprintf("%s: bad escape in %q", name, v))
	}
	return u, nil
}
