package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultAddr is the admin listener address cmd/throttled uses by default:
// loopback only.
const DefaultAddr = "127.0.0.1:9091"

// DefaultMaxBodyBytes bounds request bodies (1 MiB).
const DefaultMaxBodyBytes = 1 << 20

// maxSwapAttempts bounds how often a write re-reads the store after losing
// a race with another writer before answering 503.
const maxSwapAttempts = 32

// BucketInspector reads a client key's current bucket state for
// GET /v1/keys/{key}. The value is rendered as JSON.
type BucketInspector interface {
	Inspect(ctx context.Context, key string) (any, error)
}

// MultiplierReader reports the tier multipliers the enforcers apply now.
type MultiplierReader interface {
	Multipliers() []MultiplierStatus
}

// Settings configures a Server. Zero fields take the defaults named beside
// them; Tokens is required.
type Settings struct {
	// Store holds the configuration. Nil means a new MemoryStore.
	Store Store
	// Tokens maps a name (the "who" of the audit log) to a bearer token
	// and its role. At least one is required; see TokensFromEnv.
	Tokens map[string]Token
	// Validate checks the whole Config a write would produce, after the
	// API's own checks (cmd/throttled converts it to the limiter's policy
	// and validates that). It may return a *FieldError to name the field.
	// Nil means no extra check.
	Validate func(Config) error
	// Initial seeds an empty store (version 1). It must be valid.
	Initial Config
	// Inspector reads bucket state for GET /v1/keys/{key}. Nil: none shown.
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
	// their sizes and SHA-256 digests. With StoreSettings.AuditLimit it
	// bounds the audit log in bytes (1000 × 16 KiB by default). Zero means
	// DefaultMaxAuditEntryBytes.
	MaxAuditEntryBytes int
	// OnReset, if set, is told of each write refused because the store was
	// reset (an error wrapping ErrStoreReset), e.g. to count it. The
	// Watcher reports the resets it finds through its OnError.
	OnReset func(error)
	// ReadOnly, if set, is asked before each write (POST, PUT, DELETE)
	// with the kind of resource it changes (KindTiers, KindKeys, KindRules
	// or KindPins): an error refuses the write with 409 Conflict, its text
	// the message, as when a configuration file owns tiers, rules and
	// assignments (cmd/throttled's config.source: file). Reads are
	// unaffected. Nil: everything is writable.
	ReadOnly func(kind string) error
}

// DefaultMaxAuditEntryBytes bounds one audit entry (16 KiB).
const DefaultMaxAuditEntryBytes = 16 << 10

func (s Settings) normalize() (Settings, error) {
	if s.MaxBodyBytes < 0 || s.MaxAuditEntryBytes < 0 {
		return s, fmt.Errorf("api: Settings.MaxBodyBytes %d and MaxAuditEntryBytes %d must not be negative",
			s.MaxBodyBytes, s.MaxAuditEntryBytes)
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.MaxAuditEntryBytes == 0 {
		s.MaxAuditEntryBytes = DefaultMaxAuditEntryBytes
	}
	if s.Store == nil {
		m, err := NewMemoryStore(StoreSettings{})
		if err != nil {
			return s, err
		}
		s.Store = m
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
	l       *loader
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
	sv := &Server{s: s, l: &loader{validate: s.Validate}, auth: auth}
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
	snap, raw, err := sv.l.load(ctx, sv.s.Store)
	switch {
	case errors.Is(err, ErrBadStored):
		sv.s.Logger.Error("api: stored config is invalid; serving the last good one", "err", err, "version", snap.Version)
		return nil
	case err != nil:
		return fmt.Errorf("api: load config: %w", err)
	case raw != nil:
		return nil
	}
	seed := Snapshot{Config: sv.s.Initial, Version: 1, UpdatedAt: sv.s.Now().UTC(), UpdatedBy: "initial",
		Generation: newGeneration()}
	if err := sv.l.check(seed); err != nil {
		return fmt.Errorf("api: Settings.Initial: %w", err)
	}
	entry := AuditEntry{At: seed.UpdatedAt, Who: seed.UpdatedBy, Action: "config.seed", Resource: "config",
		Version: 1, Before: canonical(nil), After: canonical(seed.Config)}
	ok, err := sv.s.Store.Swap(ctx, nil, canonical(seed), auditEntry(entry, sv.s.MaxAuditEntryBytes))
	if err != nil {
		return fmt.Errorf("api: seed config: %w", err)
	}
	if ok { // else another instance seeded first
		sv.l.wrote(seed)
	}
	return nil
}

func (sv *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = sv.handleError
	e.Use(sv.metrics.middleware, recoverPanic)
	g := e.Group("/v1", sv.auth.middleware, sv.readOnly)
	g.GET("/tiers", sv.listTiers)
	g.POST("/tiers", sv.createTier)
	g.GET("/tiers/:name", sv.getTier)
	g.PUT("/tiers/:name", sv.replaceTier)
	g.DELETE("/tiers/:name", sv.deleteTier)
	g.GET("/keys", sv.listKeys)
	g.GET("/keys/:key", sv.getKey)
	g.PUT("/keys/:key", sv.assignKey)
	g.DELETE("/keys/:key", sv.unassignKey)
	g.GET("/rules", sv.getRules)
	g.PUT("/rules", sv.putRules)
	g.GET("/multipliers", sv.listMultipliers)
	g.GET("/multipliers/:tier/pin", sv.getPin)
	g.POST("/multipliers/:tier/pin", sv.putPin)
	g.PUT("/multipliers/:tier/pin", sv.putPin)
	g.DELETE("/multipliers/:tier/pin", sv.deletePin)
	g.GET("/audit", sv.getAudit)
	g.GET("/top", sv.getTop)
	g.GET("/openapi.json", sv.getOpenAPI)
	return e
}

// ServeHTTP implements http.Handler.
func (sv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { sv.e.ServeHTTP(w, r) }

// Echo returns the underlying router, e.g. to list its routes.
func (sv *Server) Echo() *echo.Echo { return sv.e }

// Snapshot returns the configuration the API serves now (the current
// stored document, or the last good one).
func (sv *Server) Snapshot(ctx context.Context) (Snapshot, error) {
	s, _, err := sv.l.load(ctx, sv.s.Store)
	return s, err
}

// Pins returns the pins in force now, by tier.
func (sv *Server) Pins(ctx context.Context) (map[string]Pin, error) {
	s, err := sv.Snapshot(ctx)
	if err != nil && s.Version == 0 {
		return nil, err
	}
	return s.ActivePins(sv.s.Now()), nil
}

// read loads the snapshot for a handler: store failures are 503, a bad
// stored document is logged and the last good one served.
func (sv *Server) read(c echo.Context) (Snapshot, error) {
	snap, _, err := sv.l.load(c.Request().Context(), sv.s.Store)
	if errors.Is(err, ErrBadStored) && snap.Version > 0 {
		sv.s.Logger.Warn("api: stored config is invalid; serving the last good one", "err", err)
		return snap, nil
	}
	if errors.Is(err, ErrStoreReset) && snap.Version > 0 {
		sv.s.Logger.Error("api: config store was reset; serving the configuration in force", "err", err)
		return snap, nil
	}
	if err != nil {
		sv.s.Logger.Error("api: read config", "err", err)
		return snap, httpErr(http.StatusServiceUnavailable, "", "config store unavailable")
	}
	return snap, nil
}

// apiError is an HTTP error with a JSON body {"error": ..., "field": ...}.
type apiError struct {
	code  int
	field string
	msg   string
}

func (e *apiError) Error() string { return fmt.Sprintf("api: %d %s", e.code, e.msg) }

func httpErr(code int, field, msg string) error { return &apiError{code: code, field: field, msg: msg} }

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
		ae *apiError
		fe *FieldError
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
		sv.s.Logger.Error("api: request failed", "method", c.Request().Method, "path", c.Path(), "code", code, "err", err)
	}
	_ = c.JSON(code, body)
}

// recoverPanic turns a handler panic into a 500 instead of a dropped
// connection.
func recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("api: panic: %v", r)
			}
		}()
		return next(c)
	}
}
