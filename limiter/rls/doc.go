// Package rls answers Envoy's rate limit service protocol
// (envoy.service.ratelimit.v3.RateLimitService, gRPC) with throttled's
// decisions, so that a gateway asks one throttled instead of every service
// carrying the middleware.
//
// A Server maps each RateLimitRequest onto enforce queries and decides
// them through an Enforcer's CheckKeys: the rules, tiers, multipliers, tier
// admission, refunds and store fallback of the middleware, nothing decided
// twice. The mapping:
//
//   - the request's domain must be Settings.Domain ("throttled" by
//     default); another gets NOT_FOUND;
//   - each descriptor is one query: its entry "rule" names the rule
//     (required), its entry "tier" the tier (optional: by default the tier
//     assigned to the key), and the values of its other entries, joined by
//     "|" in order, make the key ("" when there are none: one bucket for
//     the rule);
//   - the cost is the descriptor's hits_addend, else the request's, else
//     the rule's cost; limit overrides and negative hits are refused.
//
// The answer is OVER_LIMIT when any descriptor (or the tier admission cap)
// refuses; each descriptor's status carries its limit, remaining and time
// to reset, and the response carries the middleware's headers
// (X-RateLimit-*, RateLimit-Policy, RateLimit, Retry-After when refused),
// enforce.HeaderDecision when refused (over_quota or shed, so the gateway
// can answer 503 for a shed request) and the same facts as dynamic
// metadata (decision, fallback, tier, rule; in a dry run, dry_run: the
// refusal it let pass, the answer then OK).
//
// Errors follow Envoy's contract, so that the filter's failure_mode_deny
// decides what they mean: a request throttled cannot map is
// INVALID_ARGUMENT, an unknown domain NOT_FOUND, and a check the store
// failed on with no fallback to decide it UNAVAILABLE.
//
// The server also serves the gRPC health service (grpc.health.v1): SERVING
// only while Settings.Ready, the rule of /readyz, holds. Server reflection
// is off unless Settings.Reflection.
package rls
