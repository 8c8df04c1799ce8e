// Package redisstore is the shared limiter.Store on Redis or Redis Cluster:
// one Lua script per decision (lua/<algorithm>.lua, embedded), run through
// EVALSHA with a NOSCRIPT fallback, so every instance shares one truth.
//
// Scripts read time from Redis TIME, never from the application server.
// Every key gets a TTL equal to its time to refill, plus one second. Keys
// look like "<prefix><alg>:{<key>}": the hash tag keeps one decision on one
// cluster slot, and the algorithm code keeps a rule that changes algorithm
// from reading another algorithm's state. The scripts mirror the core's
// Go algorithms operation by operation; the conformance suite in this
// package holds the two stores to the same answers.
package redisstore
