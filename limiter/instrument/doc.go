// Package instrument measures decisions for Prometheus: Requests counts
// every request (or gateway check) once, with the answer its client got
// (throttled_requests_total{tier,code,reason}; the reasons are
// RequestReasons); Metrics counts decisions by tier, rule and decision, one
// per rule per request (the enforcer reports them through Metrics.Count),
// and store errors by kind; Limits exports the limits in force per tier and
// rule (throttled_limit); Store wraps
// a limiter.Store to time its decisions and count its errors; TopK keeps
// the most refused clients with bounded cardinality; EffectiveMultipliers
// exports the multiplier an instance enforces per tier and its source; and
// RefusalLog writes a rate-limited log line per refusal, the client by
// fingerprint only.
package instrument
