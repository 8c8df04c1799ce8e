// Package admin is the REST admin API of throttled (Echo, JSON in and out)
// over a policy.Store: tiers, client key → tier assignments, HTTP rules,
// multiplier pins and the audit log. It owns the HTTP side only — routes,
// bearer tokens and roles, strict decoding of request bodies, ETags and
// If-Match, read-only kinds of resources, the JSON errors, its metrics and
// the OpenAPI document. The document it edits, its validation, its
// versioned store and the Watcher that carries it to every enforcing
// instance are package policy's.
//
// # Endpoints
//
//	GET    /v1/tiers                     list tiers
//	POST   /v1/tiers                     create a tier (409 if it exists)
//	GET    /v1/tiers/{name}              one tier
//	PUT    /v1/tiers/{name}              replace a tier (404 if absent)
//	DELETE /v1/tiers/{name}              delete a tier (409 while referenced)
//	GET    /v1/keys?limit=N&cursor=C     the assignments in key order, a page at a time (next_cursor)
//	GET    /v1/keys/{key}                a key's tier and bucket state
//	PUT    /v1/keys/{key}                assign a key to a tier {"tier": "free"}
//	DELETE /v1/keys/{key}                remove the assignment
//	GET    /v1/rules                     the ordered rules
//	PUT    /v1/rules                     replace them all {"rules": [...]}
//	GET    /v1/multipliers               multipliers in force: source, age, reason, since
//	GET    /v1/multipliers/{tier}/pin    a tier's pin
//	POST   /v1/multipliers/{tier}/pin    pin {"multiplier": 0.5, "ttl": "10m"} (PUT too)
//	DELETE /v1/multipliers/{tier}/pin    unpin
//	GET    /v1/audit?limit=N             recent writes, newest first
//	GET    /v1/top?limit=N               the clients refused most lately (keys, not only fingerprints)
//	GET    /v1/openapi.json              the OpenAPI 3 document (admin/openapi.json)
//
// Errors are {"error": "...", "field": "..."}; field is a path such as
// "tiers.free.rate", "rules[2].key" or "assignments.k1.tier". A method a
// path does not serve is 405 with an Allow header.
//
// One vocabulary: durations are policy.Duration strings everywhere ("1s",
// "1m", "24h"; a bucket's period and reset_after too), ages rounded
// ("4.5s"); a multiplier's source is the source label of
// throttled_effective_multiplier (controller, pin, stale, none); its
// reason says why the controller last moved it and since says when.
//
// With Settings.ReadOnly a caller makes kinds of resources read-only (as
// cmd/throttled's config.source: file does for tiers, keys and rules):
// writes to them are 409 naming why, reads are unaffected. policy.Replace
// writes a whole Config at once, only over the version the caller read.
//
// Deleting a tier is refused (409, naming the references) while
// default_tier, anonymous_tier or a key assignment names it; the operator
// moves those first. Rules do not name tiers. The tier's pin, if any, is
// deleted with it.
//
// # Validation
//
// Bodies are decoded strictly: unknown fields (matched case-sensitively),
// wrong types, bad durations and trailing data are 400 naming the field;
// bodies over Settings.MaxBodyBytes (1 MiB) are 413 Content Too Large,
// naming the field "body". Then the whole Config
// the write would produce is checked — policy.ValidateConfig (names,
// ranges: no negative, zero where not allowed, NaN, ±Inf or absurd numbers;
// then the compiled enforce.Policy) and the pins — and only a valid result
// is written.
//
// # Concurrency
//
// Every resource has a strong ETag: a hash of its canonical JSON and the
// version that last wrote it. Writes to existing resources need If-Match
// (428 without, 412 on a mismatch; "*" matches any existing resource);
// creating an absent key assignment or pin needs none (an expired pin counts
// as absent; the next write drops it). The whole state is one JSON
// document (a policy.Snapshot); a write (policy.Doc.Update) reads it,
// checks If-Match and validation on it, and swaps the new document in only
// if the stored one is still byte-for-byte what it read, retrying from the
// start otherwise. So of two writes with the same
// If-Match exactly one succeeds and the other gets 412, and nothing is ever
// half-written.
//
// # Security
//
// Every request needs a bearer token (Settings.Tokens or TokensFromEnv),
// compared in constant time against all tokens: 401 without a valid one
// (with WWW-Authenticate: Bearer), 403 when a read token writes. The
// token's name is the "who" of the audit log. The caller picks the listener;
// cmd/throttled binds DefaultAddr (127.0.0.1) by default.
//
// # Persistence
//
// The document, its last good copy, the audit log (entries of at most
// Settings.MaxAuditEntryBytes, default 16 KiB), the propagation to every
// instance and the handling of a store that lost its data are package
// policy's (see its documentation). A write refused because the store was
// reset is 409, and nothing is applied.
//
// # Metrics
//
// With Settings.Registerer:
//
//	throttled_admin_requests_total{code}     counter: requests by status
//	throttled_admin_write_conflicts_total    counter: writes retried after a lost race
package admin
