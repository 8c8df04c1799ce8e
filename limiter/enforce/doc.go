// Package enforce applies throttled's HTTP policy to requests: it matches
// rules by method and path, identifies the client, resolves its tier and
// multiplier, asks a limiter.Store once per matching rule, and turns the
// decisions into responses (X-RateLimit-*, IETF RateLimit fields,
// Retry-After, JSON refusal bodies) and trace attributes.
//
// An Enforcer applies a Policy (tiers and ordered Rules). A refusal for
// quota by one rule refunds what the earlier rules took. Enforcer.Middleware is a
// net/http adapter of the decision alone; limiter/pipeline runs the whole
// request path around it (bulkheads, the gate, breakers), for net/http and,
// through limiter/echolimit, Echo. Modes: ModeEnforce refuses at once, ModeShadow
// only records, ModeDelay waits up to MaxWait for capacity: waiters take
// turns per bucket key (O(N) store calls for N waiters), and at most
// Settings.MaxWaiting wait at once. Settings.DryRun makes refusals
// observe-only for the whole Enforcer: DryRunLoad those for load,
// DryRunAll the quota's too; the request passes, counted dry_run_<reason>
// and marked in Result.DryRun.
//
// # Quota and load
//
// A quota counts every request its client sent that was not refused for
// quota. A refusal for load (a rule's multiplier shed, the tier admission
// cap; after the Enforcer, in limiter/pipeline, the gate, a bulkhead, an
// open breaker) and an upstream's failure never give quota back. So a
// client above its quota runs out of it and gets 429 for its excess
// whichever loop sheds, and a client under its quota never runs out and is
// only ever shed (503). The quota is asked first: a request over quota is
// 429 even when it would be shed too. Across rules as well: a rule's shed
// is held while the later rules are asked (a delay rule then does not
// wait), and a later refusal for quota makes the request 429 and gives
// back what the earlier rules took, the shed's quota included (with it an
// admission token the shed did not take: at most one per such request,
// within the admission capacity). With no refusal for quota it stays 503
// by the first rule that shed, every rule's quota spent.
//
// # Several rules
//
// A request's rules (and each rule's several Limits) are decided one store
// call each, in order, and a refusal for quota refunds what the earlier
// rules and limits took (a shed leaves it spent, as above). That is not one atomic step
// across rules (each rule's own decision is), and the gap is bounded:
//
//   - Between a take and its refund (one check's duration) the unit is
//     held: requests of the same bucket may be refused for it meanwhile, at
//     most one unit per refused request in flight.
//   - FixedWindow and SlidingWindowCounter: a refund that lands in the next
//     window gives back a unit of that window, so a window may admit up to
//     its limit plus the requests refused across its start.
//   - SlidingWindowLog: a refund removes the newest entry, maybe another
//     request's; the count is exact, and the freed unit comes back at most
//     the refunded check's duration early.
//
// TokenBucket, GCRA and LeakyBucket refunds are exact. The tests in
// multirule_test.go pin these bounds.
//
// CheckKeys is the same decision without an HTTP request, for gateways
// that ask throttled: each Query names a rule, a key, optionally a tier,
// and a cost. CheckHandler serves it as POST /v1/check; the gRPC rate limit
// service for Envoy (limiter/rls) calls it too.
//
// HealthHandler and ReadyHandler answer /healthz and /readyz; Probe is
// their readiness rule for other health protocols.
package enforce
