// Package instrument measures decisions for Prometheus: Metrics counts
// decisions by tier, rule and decision as clients saw them (the enforcer
// reports them through Metrics.Count) and store errors by kind; Store wraps
// a limiter.Store to time its decisions and count its errors; TopK keeps
// the most refused clients with bounded cardinality; EffectiveMultipliers
// exports the multiplier an instance enforces per tier and its source; and
// RefusalLog writes a rate-limited log line per refusal, the client by
// fingerprint only.
package instrument
