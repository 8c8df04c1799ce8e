// Package fallback keeps decisions coming while the shared store fails. A
// Store wraps the shared (Redis) store behind a Guard, typically a circuit
// breaker with a per-decision deadline; while the guard refuses or the call
// fails, each rule decides by its limiter.FallbackPolicy: local (an
// in-memory limiter with this instance's share of the quota, limit ÷
// instances, the instances counted by an InstanceCounter such as
// coord.Heartbeat), allow, or deny. Fallback decisions are marked
// Decision.Fallback.
package fallback
