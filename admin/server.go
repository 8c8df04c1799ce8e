package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// DefaultAddr is the admin listener address cmd/throttled uses by default:
// loopback only.
const DefaultAddr = "127.0.0.1:9091"

// DefaultMaxBodyBytes bounds request bodies (1 MiB).
const DefaultMaxBodyBytes = 1 << 20

// BucketInspector tells GET /v1/keys/{key} how enforcement sees a client
// key (*enforce.Enforcer is one): the tier of a request bearing it, whether
// the key is believed (an unassigned key is anonymous unless
// identity.unassigned_keys is default_tier), and its current bucket state,
// one entry per rule keyed by the client alone.
type BucketInspector interface {
	KeyTier(key string) (tier string, believed bool)
	Inspect(ctx context.Context, key string) ([]enforce.BucketState, error)
}

// MultiplierReader reports the tier multipliers the enforcers apply now.
type MultiplierReader interface {
	Multipliers() []MultiplierStatus
}

// MultiplierStatus is one tier's current multiplier as the enforcers see it.
type MultiplierStatus struct {
	Tier       string    `json:"tier" yaml:"tier"`
	Multiplier float64   `json:"multiplier" yaml:"multiplier"`
	Source     string    `json:"source" yaml:"source"` // as throttled_effective_multiplier's source label: "controller", "stale" or "none"
	UpdatedAt  time.Time `json:"updated_at" yaml:"updated_at"`
	// Reason says why the controller last moved the tier's multiplier
	// ("decrease: latency 0.82s > target 0.25s"), Since when; both zero
	// when it never moved it.
	Reason string    `json:"reason,omitempty" yaml:"reason,omitempty"`
	Since  time.Time `json:"since" yaml:"since"`
}

// Settings configures a Server. Zero fields take the defaults named beside
// them; Tokens is required.
type Settings struct {
	// Store holds the configuration. Nil means a new policy.MemoryStore.
	Store policy.Store
	// Tokens maps a name (the "who" of the audit log) to a bearer token
	// and its role. At least one is required; see TokensFromEnv.
	Tokens map[string]Token
	// Initial seeds an empty store (version 1). It must be valid. Empty
	// (the zero Config) seeds nothing: the first write makes version 1.
	Initial policy.Config
	// Inspector tells an unassigned key's tier and reads bucket state for
	// GET /v1/keys/{key}. Nil: neither shown.
	Inspector BucketInspector
	// Multipliers reports current multipliers for GET /v1/multipliers.
	// Nil: every tier shows 1 with source "default" (pins still apply).
	Multipliers MultiplierReader
	// Top reports the clients refused most for GET /v1/top. Nil: an empty list.
	Top TopReader
	// Registerer receives the metrics. Nil: no metrics.
	Registerer prometheus.Registerer
	// Logger reports bad stored documents and internal errors. Nil: discard.
	Logger *slog.Logger
	// Now is the clock of audit entries, pins and multiplier ages. Nil
	// means time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds request bodies; larger ones get 413 naming "body". Zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxAuditEntryBytes bounds one audit entry: a larger one keeps who,
	// when, what and the version, and its before and after give way to
	// their sizes and SHA-256 digests. With policy.StoreSettings.AuditLimit
	// it bounds the audit log in bytes (1000 × 16 KiB by default). Zero
	// means policy.DefaultMaxAuditEntryBytes.
	MaxAuditEntryBytes int
	// OnReset, if set, is told of each write refused because the store was
	// reset (an error wrapping policy.ErrStoreReset), e.g. to count it. The
	// policy.Watcher reports the resets it finds through its OnError.
	OnReset func(error)
	// ReadOnly, if set, is asked before each write (POST, PUT, DELETE)
	// with the kind of resource it changes (KindTiers, KindKeys, KindRules
	// or KindPins): an error refuses the write with 409 Conflict, its text
	// the message, as when a configuration file owns tiers, rules and
	// assignments (cmd/throttled's config.source: file). Reads are
	// unaffected. Nil: everything is writable.
	ReadOnly func(kind string) error
}

func (s Settings) normalize() (Settings, error) {
	if s.MaxBodyBytes < 0 || s.MaxAuditEntryBytes < 0 {
		return s, fmt.Errorf("admin: Settings.MaxBodyBytes %d and MaxAuditEntryBytes %d must not be negative",
			s.MaxBodyBytes, s.MaxAuditEntryBytes)
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.MaxAuditEntryBytes == 0 {
		s.MaxAuditEntryBytes = policy.DefaultMaxAuditEntryBytes
	}
	if s.Store == nil {
		var err error
		if s.Store, err = policy.NewMemoryStore(policy.StoreSettings{}); err != nil {
			return s, err
		}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s, nil
}

// Server is the REST admin API. It is an http.Handler; the caller chooses
// the listener (cmd/throttled binds 127.0.0.1 by default).
type Server struct {
	e       *echo.Echo
	s       Settings
	doc     *policy.Doc
	auth    *authenticator
	metrics *metrics
}

// New checks s, loads the stored configuration (seeding an empty store
// with s.Initial) and returns the Server. A stored document that fails
// validation is logged and the last good one served; the store being
// unreachable is an error.
func New(ctx context.Context, s Settings) (*Server, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	auth, err := newAuthenticator(s.Tokens)
	if err != nil {
		return nil, err
	}
	for _, n := range weakTokens(s.Tokens) {
		s.Logger.Warn("admin token is shorter than 16 bytes and guessable: use a long random token outside a demo", "name", n)
	}
	sv := &Server{s: s, doc: policy.NewDoc(s.Store), auth: auth}
	if err := sv.start(ctx); err != nil {
		return nil, err
	}
	// Registered only once the store answered, so that a caller may retry
	// New with the same Registerer after a store outage.
	if sv.metrics, err = newMetrics(s.Registerer); err != nil {
		return nil, err
	}
	sv.e = sv.routes()
	return sv, nil
}

// start loads the stored configuration, seeding an empty store.
func (sv *Server) start(ctx context.Context) error {
	snap, err := sv.doc.Seed(ctx, sv.s.Initial, sv.s.Now(), sv.s.MaxAuditEntryBytes)
	switch {
	case errors.Is(err, policy.ErrBadStored):
		sv.s.Logger.Error("admin: stored config is invalid; serving the last good one", "err", err, "version", snap.Version)
		return nil
	case errors.Is(err, policy.ErrInvalid):
		return fmt.Errorf("admin: Settings.Initial: %w", err)
	}
	return err
}

// ServeHTTP implements http.Handler.
func (sv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { sv.e.ServeHTTP(w, r) }

// Echo returns the underlying router, e.g. to list its routes.
func (sv *Server) Echo() *echo.Echo { return sv.e }

// Snapshot returns the configuration the API serves now (the current
// stored document, or the last good one).
func (sv *Server) Snapshot(ctx context.Context) (policy.Snapshot, error) { return sv.doc.Load(ctx) }

// Pins returns the pins in force now, by tier.
func (sv *Server) Pins(ctx context.Context) (map[string]policy.Pin, error) {
	s, err := sv.Snapshot(ctx)
	if err != nil && s.Version == 0 {
		return nil, err
	}
	return s.ActivePins(sv.s.Now()), nil
}

// read loads the snapshot for a handler: store failures are 503, a bad
// stored document is logged and the last good one served.
func (sv *Server) read(c echo.Context) (policy.Snapshot, error) {
	snap, err := sv.doc.Load(c.Request().Context())
	if errors.Is(err, policy.ErrBadStored) && snap.Version > 0 {
		sv.s.Logger.Warn("admin: stored config is invalid; serving the last good one", "err", err)
		return snap, nil
	}
	if errors.Is(err, policy.ErrStoreReset) && snap.Version > 0 {
		sv.s.Logger.Error("admin: config store was reset; serving the configuration in force", "err", err)
		return snap, nil
	}
	if err != nil {
		sv.s.Logger.Error("admin: read config", "err", err)
		return snap, httpErr(http.StatusServiceUnavailable, "", "config store unavailable")
	}
	return snap, nil
}

// httpError is an HTTP error with a JSON body {"error": ..., "field": ...}.
type httpError struct {
	code  int
	field string
	msg   string
}

func (e *httpError) Error() string { return fmt.Sprintf("admin: %d %s", e.code, e.msg) }

func httpErr(code int, field, msg string) error {
	return &httpError{code: code, field: field, msg: msg}
}

type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// handleError renders every error as JSON.
func (sv *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var (
		ae *httpError
		fe *policy.FieldError
		he *echo.HTTPError
	)
	body, code := errorBody{Error: "internal error"}, http.StatusInternalServerError
	switch {
	case errors.As(err, &ae):
		body, code = errorBody{Error: ae.msg, Field: ae.field}, ae.code
	case errors.As(err, &fe):
		body, code = errorBody{Error: fe.Field + ": " + fe.Msg, Field: fe.Field}, http.StatusBadRequest
	case errors.Is(err, errTooLarge):
		body = errorBody{Error: fmt.Sprintf("body: larger than %d bytes", sv.s.MaxBodyBytes), Field: "body"}
		code = http.StatusRequestEntityTooLarge
	case errors.As(err, &he):
		body, code = errorBody{Error: fmt.Sprint(he.Message)}, he.Code
	}
	if code >= 500 && code != http.StatusServiceUnavailable {
		sv.s.Logger.Error("admin: request failed", "method", c.Request().Method, "path", c.Path(), "code", code, "err", err)
	}
	_ = c.JSON(code, body)
}

// recoverPanic turns a handler panic into a 500 instead of a dropped
// connection.
func recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("admin: panic: %v", r)
			}
		}()
		return next(c)
	}
}
