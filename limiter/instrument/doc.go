// Package instrument measures decisions for Prometheus: Store wraps a
// limiter.Store to count decisions by tier, rule and decision and to time
// them, Metrics counts store errors by kind, and TopK keeps the most
// refused clients with bounded cardinality.
package instrument
