// Package redisstore is the shared limiter.Store on Redis or Redis Cluster:
// one Lua script per decision (lua/<algorithm>.lua, embedded), run through
// EVALSHA with a NOSCRIPT fallback, so every instance shares one truth.
//
// Concurrent decisions are coalesced (Settings): while Pipelines pipelines
// (one by default) are in flight, new decisions wait and leave together in
// the next, up to MaxBatch, after at most Linger for as many as left in the
// last batch. A decision that finds a pipeline free and nothing waiting is
// sent by its caller's goroutine (on a client that honours deadlines), so
// at low load a decision costs no goroutine hand-off. On a single Redis a
// batch is one EVALSHA per algorithm of a batch script that decides each
// request in turn (one TIME for all, each distinct rule's arguments sent
// once); on a
// cluster each decision is its own EVALSHA and the client pipelines them
// per node, and each master has its own queue and pipelines in flight (a
// lane), so a master that stalls or dies holds up only the decisions on
// its own slots. A caller whose context ends gets its error at once; its
// decision may still be made if its batch already left.
//
// Scripts read time from Redis TIME, never from the application server.
// Every algorithm but the sliding log keeps a client key's state as one
// field of a hash, its bucket, shared by the keys of one cluster slot
// ("<prefix><alg>{<slot tag>}", see Bucket): doubles packed with their
// expiry (struct.pack, 28 bytes, 44 for the sliding window counter; a
// token bucket's or GCRA's 20 while its units admitted equal its units
// sent, as at multiplier 1), about 58 bytes of Redis memory per live key
// (token bucket, GCRA; 66 with 28 bytes) where a key of its own cost 165.
// Each field expires (is swept) after its time to refill plus one second,
// and the bucket's TTL covers its latest field, up to the next multiple of
// BucketTTLGrid (4 s), so that a key that comes back extends it at most
// once in 4 s. The sliding log keeps its sorted sets at
// "<prefix><alg>:{<hash of key>}:<key>" with a TTL equal to its time to
// refill plus one second. The hash tags, made by the store and never by the
// client, keep one decision on one cluster slot, and the algorithm code keeps
// a rule that changes algorithm from reading another algorithm's state. The
// prefix must not contain { or }. The scripts mirror the core's Go
// algorithms operation by operation; the conformance suite in this package
// holds the two stores to the same answers.
package redisstore
