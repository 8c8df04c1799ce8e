package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// change is what a mutation did, for the audit log.
type change struct {
	action   string // e.g. "tier.create"
	resource string // e.g. "tiers/free"
	before   any    // nil: JSON null
	after    any
}

// mutation edits a copy of the current snapshot, whose Version is already
// the new one. It checks preconditions itself, so that they are judged on
// the very snapshot the swap replaces.
type mutation func(s *Snapshot) (change, error)

// write applies mut to the current snapshot, validates the whole result and
// swaps it in atomically with its audit entry. When another writer got there
// first it starts again from the new snapshot, so preconditions (If-Match)
// and validation always hold for what is written.
func (sv *Server) write(c echo.Context, mut mutation) (Snapshot, error) {
	ctx := c.Request().Context()
	who, _ := c.Get(ctxWho).(string)
	for range maxSwapAttempts {
		cur, raw, err := sv.l.load(ctx, sv.s.Store)
		if errors.Is(err, ErrStoreReset) {
			return Snapshot{}, sv.refuseReset(ctx, raw, cur, err)
		}
		if err != nil && !errors.Is(err, ErrBadStored) {
			sv.s.Logger.Error("api: read config for a write", "err", err)
			return Snapshot{}, httpErr(http.StatusServiceUnavailable, "", "config store unavailable")
		}
		now := sv.s.Now().UTC()
		next := cur.clone()
		next.Version, next.UpdatedAt, next.UpdatedBy = cur.Version+1, now, who
		if next.Generation == "" { // a document from before generations
			next.Generation = newGeneration()
		}
		pruneExpiredPins(&next, now)
		ch, err := mut(&next)
		if err != nil {
			return Snapshot{}, err
		}
		if err := sv.l.check(next); err != nil {
			return Snapshot{}, err
		}
		entry := AuditEntry{At: now, Who: who, Action: ch.action, Resource: ch.resource,
			Version: next.Version, Before: canonical(ch.before), After: canonical(ch.after)}
		ok, err := sv.s.Store.Swap(ctx, raw, canonical(next), auditEntry(entry, sv.s.MaxAuditEntryBytes))
		if err != nil {
			sv.s.Logger.Error("api: write config", "err", err)
			return Snapshot{}, httpErr(http.StatusServiceUnavailable, "", "config store unavailable")
		}
		if ok {
			sv.l.wrote(next)
			return next, nil
		}
		sv.metrics.conflicts.Inc()
	}
	return Snapshot{}, httpErr(http.StatusServiceUnavailable, "",
		fmt.Sprintf("lost the race with other writers %d times; retry", maxSwapAttempts))
}

// refuseReset answers a write against a reset config store (err wraps
// ErrStoreReset): 409, nothing applied. A store that lost data gets the
// configuration in force (snap) back first, so that a retry applies to it.
func (sv *Server) refuseReset(ctx context.Context, raw []byte, snap Snapshot, err error) error {
	next := "GET the configuration now stored, check it and retry"
	if storeLost(err) {
		next = fmt.Sprintf("the configuration in force (version %d) is restored; GET it, check and retry", snap.Version)
		if _, rerr := restore(ctx, sv.s.Store, raw, snap, sv.s.Now()); rerr != nil {
			next = fmt.Sprintf("restoring the configuration in force (version %d) failed, retry later", snap.Version)
			err = errors.Join(err, rerr)
		}
	}
	sv.s.Logger.Error("api: write refused: the config store was reset", "err", err)
	if sv.s.OnReset != nil {
		sv.s.OnReset(err)
	}
	return httpErr(http.StatusConflict, "", strings.TrimPrefix(err.Error(), "api: ")+": this write was not applied; "+next)
}

// touch records that the snapshot's version wrote resource.
func (s *Snapshot) touch(resource string) {
	if s.Revisions == nil {
		s.Revisions = map[string]int64{}
	}
	s.Revisions[resource] = s.Version
}

// forget drops a deleted resource's revision.
func (s *Snapshot) forget(resource string) { delete(s.Revisions, resource) }

func (s Snapshot) rev(resource string) int64 { return s.Revisions[resource] }

func pruneExpiredPins(s *Snapshot, now time.Time) {
	for t, p := range s.Pins {
		if !p.Active(now) {
			delete(s.Pins, t)
			s.forget("pins/" + t)
		}
	}
}

// etagOf is the strong ETag of a resource: a hash of its canonical JSON and
// the version that last wrote it, so it changes on every write (even one
// that restores earlier content) and on nothing else.
func etagOf(v any, rev int64) string {
	h := sha256.New()
	h.Write(canonical(v))
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
