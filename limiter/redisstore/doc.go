// Package redisstore is the shared limiter.Store on Redis or Redis Cluster:
// one Lua script per decision (lua/<algorithm>.lua, embedded), run through
// EVALSHA with a NOSCRIPT fallback, so every instance shares one truth.
//
// Scripts read time from Redis TIME, never from the application server.
// Every key gets a TTL equal to its time to refill, plus one second. Keys
// look like "<prefix><alg>:{<hash of key>}:<key>": the hash tag, made by the
// store and never by the client, keeps one decision on one cluster slot,
// and the algorithm code keeps a rule that changes algorithm from reading
// another algorithm's state. The prefix must not contain { or }. The scripts mirror the core's
// Go algorithms operation by operation; the conformance suite in this
// package holds the two stores to the same answers.
package redisstore
