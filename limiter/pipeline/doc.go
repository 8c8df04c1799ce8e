// Package pipeline is throttled's one request path, written once and run
// by every front: the sidecar's reverse proxy, net/http middleware
// (Pipeline.Handler) and Echo (limiter/echolimit).
//
// A request goes through these stages, each present when its Settings
// field is set:
//
//  1. the Enforcer's decision: quota rules, then tier admission, then
//     multipliers (enforce.Enforcer.Check). A refusal is its 429 or 503
//     with the rate-limit headers and a JSON enforce.Refusal.
//  2. the bulkheads: the tier's (Settings.Bulkheads), then the route's
//     (Settings.RouteBulkheads). Full: 503 "bulkhead" (the rule is the
//     bulkhead's name), no rate-limit headers.
//  3. the inner loop's gate (Settings.Gate), entered with the tier's
//     priority (a request no rule matched: the unmatched tier's, by default
//     the lowest). Shed: 503 "shed" by rule "concurrency", no rate-limit
//     headers. In the Enforcer's dry run of the load (enforce.DryRun) a
//     shed request goes on without a permit, counted dry_run_shed by rule
//     "concurrency", its Result's DryRun "shed".
//  4. the route's circuit breaker (Settings.Breakers, bulkhead.Breaker.Serve):
//     open, 503 "breaker_open" by the breaker's name, no rate-limit headers.
//  5. the handler (or upstream). An admitted request that a rule limits
//     carries the rate-limit headers on the handler's answer, in place of
//     any the handler set under the same names.
//  6. permits released; Settings.Answers is told of the answer's status,
//     the time from the gate to its headers and the handler's own time.
//
// Settings.Requests counts every request once, where its answer is final:
// the Enforcer's refusal (Result.AnswerReason), a 503 of stages 2–4
// (concurrency, bulkhead, breaker_open) or a 499 (client_gone), else the
// handler's status once it returned (admitted or fallback; upstream_error
// from 500 up).
//
// No refusal of stages 2–4, nor the handler's failure, gives quota back:
// the quota counts every request the client sent that was not refused for
// quota (limiter/enforce's package doc, "Quota and load"), so a client
// over its quota gets 429 for its excess whichever stage sheds, and one
// under it is only ever shed.
//
// The bulkheads come before the gate, as the sidecar has always had them
// (a request that a bulkhead refuses never takes a gate permit). A client
// that goes away while it waits for a bulkhead or the gate gets 499, its
// quota spent too. Every 503 of stages 2–4 has a
// jittered Retry-After and is counted in Settings.Metrics as
// (tier, rule, reason) and told to Settings.Refusals; the Enforcer counts
// its own decisions.
//
// Nothing in the pipeline allocates for an admitted request beyond what
// the Enforcer's Check does (its state and writer are pooled), save a
// breaker's call: its context, the request carrying it, and gobreaker's
// own (see BenchmarkPipeline); so does Echo's front.
//
// A front that is not net/http runs Serve with its own next (see
// limiter/echolimit). A reverse proxy runs Handler around its
// httputil.ReverseProxy: the breaker then counts the proxy's answers (its
// error handler's 502 and 504 among them), its deadline ends the upstream
// call (context.Cause is a *bulkhead.DeadlineError, a timeout, so answer
// 504 to it), and the rate-limit headers replace the upstream's on every
// answer but a 101, to which ReverseProxy adds the upstream's headers after
// the hijack: drop those in ModifyResponse for a limited request (the
// reverseProxy front of this package's tests shows how).
package pipeline
