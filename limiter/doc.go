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
// # The map
//
// This package is the core: Store, Request, Decision, the algorithms and
// the in-memory store, on the standard library alone. Around it, one job
// per package:
//
//	limiter/redisstore  the shared store on Redis (Lua in lua/*.lua)
//	limiter/fallback    decisions while the shared store fails (local share, allow, deny)
//	limiter/identity    who sent a request: API key, verified JWT, client IP
//	limiter/enforce     HTTP rules → decisions → responses (net/http), probes
//	limiter/echolimit   the Echo adapter of enforce
//	limiter/instrument  Prometheus metrics of decisions, top refused clients
//	limiter/retry       the client side: a RoundTripper honouring Retry-After
//	limiter/multiplier  the contract with the controller: multiplier.Set, Source
//	limiter/coord       coordination through Redis: multipliers, leader lease, heartbeats
package limiter
