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
// (1 when the service is healthy). Each algorithm keeps two limits in ONE key
// (the sliding log: two keys in one cluster slot), updated in one atomic
// step, and admits only when both hold:
//
//   - the quota limit, at the rule's base rate, counts every request the
//     client sent, admitted or shed: empty → OverQuota;
//   - the admission limit, at base × m, counts only admitted requests: quota
//     fine but admission empty → Shed.
//
// OverQuota is checked first, and an over-quota request consumes nothing. A
// shed request spends quota but not admission. So a client whose offered rate
// stays under its quota is never refused with OverQuota, only shed by the
// multiplier; a client above its quota exhausts it and gets OverQuota
// whatever m is: 503 is for requests the client had every right to send.
// A shed decision's RetryAfter is when both limits would admit the request.
// A refund (a later rule refused) gives back to both limits. With m ≥ 1 no
// request is shed, the two limits are identical and every algorithm behaves
// exactly like its plain version.
//
// How m applies per algorithm:
//
//   - TokenBucket: a second bucket refilling at rate×m with capacity
//     max(burst×m, cost).
//   - GCRA: a second theoretical arrival time with emission interval T/m and
//     tolerance for max(burst×m, cost) requests.
//   - LeakyBucket (as a meter): a second meter draining at rate×m with
//     capacity max(burst×m, cost).
//   - FixedWindow, SlidingWindowLog, SlidingWindowCounter: a second count (or
//     log) of the admitted requests in the same windows, judged against a
//     second limit max(floor(limit×m), cost).
//
// # Algorithms and burst
//
// TokenBucket, GCRA and LeakyBucket admit at most Burst at once and Limit per
// Period on average. The window algorithms ignore Burst: SlidingWindowLog is
// exact (at most Limit in any Period) and keeps one entry per request, so
// its Limit is at most MaxLogLimit; FixedWindow and SlidingWindowCounter
// may admit up to 2×Limit across a window boundary, so their effective burst
// is 2×Limit.
//
// FixedWindow windows start at multiples of Period since the Unix epoch;
// with AlignCalendar they are UTC calendar units instead (Period Minute,
// Hour, Day or Month): a day quota resets at 00:00 UTC, a month quota at
// 00:00 UTC on the 1st, by the store's clock (Redis TIME for the Redis
// store).
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
//	limiter/pipeline    the one request path: decision → bulkheads → gate → breaker → handler
//	limiter/echolimit   the Echo front of pipeline
//	limiter/rls         Envoy's rate limit service (gRPC) over enforce
//	limiter/instrument  Prometheus metrics of decisions, top refused clients
//	limiter/retry       the client side: a RoundTripper honouring Retry-After
//	limiter/multiplier  the contract with the controller: multiplier.Set, Source
//	limiter/coord       coordination through Redis: multipliers, leader lease, heartbeats
//	limiter/tokenlease  lease mode: batches of tokens for hot keys, spent locally
package limiter
