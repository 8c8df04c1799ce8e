// Package limiter decides whether a request may pass: per-key token buckets
// and other algorithms, held in Redis (atomic Lua, shared by every instance)
// or in memory (the embedded default).
//
// # Decisions
//
// A Store makes one atomic decision per call. The answer is a Decision whose
// Reason is Allowed, OverQuota (the key spent its quota: HTTP 429) or Shed
// (the key has quota but the service is under load: HTTP 503).
//
// # Quota and load
//
// Every request carries the tier multiplier m published by the controller
// (1 when the service is healthy). Each algorithm keeps two limits in ONE key,
// updated in one atomic step, and admits only when both hold:
//
//   - the quota limit, at the rule's base rate: empty → OverQuota;
//   - the admission limit, at base × m: quota fine but admission empty → Shed.
//
// A refused request consumes nothing from either. With m = 1 the two are
// identical and every algorithm behaves exactly like its plain version.
//
// How m applies per algorithm:
//
//   - TokenBucket: a second bucket refilling at rate×m with capacity
//     max(burst×m, cost).
//   - GCRA: a second theoretical arrival time with emission interval T/m and
//     tolerance for max(burst×m, cost) requests.
//   - LeakyBucket (as a meter): a second meter draining at rate×m with
//     capacity max(burst×m, cost).
//   - FixedWindow, SlidingWindowLog, SlidingWindowCounter: the same window
//     state, judged against a second limit max(floor(limit×m), cost).
//
// # Algorithms and burst
//
// TokenBucket, GCRA and LeakyBucket admit at most Burst at once and Limit per
// Period on average. The window algorithms ignore Burst: SlidingWindowLog is
// exact (at most Limit in any Period); FixedWindow and SlidingWindowCounter
// may admit up to 2×Limit across a window boundary, so their effective burst
// is 2×Limit.
//
// # HTTP enforcement
//
// An Enforcer applies a Policy (tiers and ordered HTTPRules) to requests: it
// identifies the client (Identifier: API key, verified JWT subject, client
// IP through trusted proxies only), finds its tier (TierLookup), reads the
// tier's multiplier (MultiplierSource, e.g. a MultiplierSubscriber) and asks
// the Store once per matching rule. A refusal by one rule refunds what the
// earlier rules took. Middleware (net/http, http.go) and EchoMiddleware
// (echo.go) are thin adapters over Enforcer.Check; a Result writes the
// X-RateLimit-* and IETF RateLimit headers and the JSON refusal body.
//
// # Failure and coordination
//
// Fallback wraps the Redis store behind a Guard (a circuit breaker with a
// per-decision deadline) and decides by each rule's FallbackPolicy while
// Redis fails: local (this instance's share of the quota, from a Heartbeat
// count of live instances), allow or deny. MultiplierPublisher and
// MultiplierSubscriber carry the controller's multipliers through a Redis
// hash and channel; Lease elects one controller leader.
//
// # Redis
//
// The Redis store runs one Lua script per decision through EVALSHA with a
// NOSCRIPT fallback. Scripts read time from Redis TIME, never from the
// application server. Every key gets a TTL equal to its time to refill, plus
// one second. Keys look like "<prefix><alg>:{<key>}": the hash tag keeps one
// decision on one cluster slot, and the algorithm code keeps a rule that
// changes algorithm from reading another algorithm's state.
package limiter
