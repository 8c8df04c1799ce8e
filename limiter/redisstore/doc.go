// Package redisstore is the shared limiter.Store on Redis or Redis Cluster:
// one Lua script per decision (lua/<algorithm>.lua, embedded), run through
// EVALSHA with a NOSCRIPT fallback, so every instance shares one truth.
//
// Concurrent decisions are coalesced (Settings): while Pipelines pipelines
// are in flight, new decisions wait and leave together in the next, up to
// MaxBatch. On a single Redis a batch is one EVALSHA per algorithm of a
// batch script that decides each request in turn (one TIME for all); on a
// cluster each decision is its own EVALSHA and the client pipelines them
// per node. A caller whose context ends gets its error at once; its
// decision may still be made if its batch already left.
//
// Scripts read time from Redis TIME, never from the application server.
// Every algorithm but the sliding log keeps its state as doubles packed in
// one string (struct.pack: 24 bytes, 40 for the sliding window counter),
// read with GET and written with its TTL in one SET … PX; a hash written by
// older versions is read once and replaced.
// Every key gets a TTL equal to its time to refill, plus one second. Keys
// look like "<prefix><alg>:{<hash of key>}:<key>": the hash tag, made by the
// store and never by the client, keeps one decision on one cluster slot,
// and the algorithm code keeps a rule that changes algorithm from reading
// another algorithm's state. The prefix must not contain { or }. The scripts mirror the core's
// Go algorithms operation by operation; the conformance suite in this
// package holds the two stores to the same answers.
package redisstore
