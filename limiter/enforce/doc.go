// Package enforce applies throttled's HTTP policy to requests: it matches
// rules by method and path, identifies the client, resolves its tier and
// multiplier, asks a limiter.Store once per matching rule, and turns the
// decisions into responses (X-RateLimit-*, IETF RateLimit fields,
// Retry-After, JSON refusal bodies) and trace attributes.
//
// An Enforcer applies a Policy (tiers and ordered Rules). A refusal by one
// rule refunds what the earlier rules took. Enforcer.Middleware is the
// net/http adapter; the Echo adapter lives in limiter/echolimit, so net/http
// users never import Echo. Modes: ModeEnforce refuses at once, ModeShadow
// only records, ModeDelay waits up to MaxWait for capacity.
//
// CheckKeys is the same decision without an HTTP request, for gateways
// that ask throttled: each Query names a rule, a key, optionally a tier,
// and a cost. CheckHandler serves it as POST /v1/check; the gRPC rate limit
// service for Envoy (limiter/rls) calls it too.
//
// HealthHandler and ReadyHandler answer /healthz and /readyz; Probe is
// their readiness rule for other health protocols.
package enforce
