// Package tokenlease spends tokens leased from a shared store locally: for
// a hot key an instance takes a batch of tokens from the shared store in one
// decision (Cost = the request's cost + Size) and admits the next requests
// from that batch without a round trip.
//
// # Bound
//
// Leased tokens are spent from the shared bucket when they are leased, so
// across N instances the shared store never grants more than it would;
// what leases change is when tokens are spent. An instance holds at most
// Size unspent tokens per key (one refill at a time per key), so over any
// window the keys admit at most what the shared store alone would admit
// plus N × Size (whenever a token was leased, it was spent in the shared
// store then). Unspent tokens live while their key is in use and are
// dropped once it was quiet for TTL (they are not given back: an instance
// that goes quiet under-admits by at most Size).
//
// # When it leases
//
// Only while the request's multiplier is ≥ 1 (no shedding: a shed would
// spend quota but not admission, which a batch cannot split), only for
// token bucket, GCRA and leaky bucket rules, never for refunds or peeks,
// and only for a key seen within TTL (the first decision of a key is
// exact). Everything else, and a lease the shared store refuses, is an
// exact decision of the shared store. A key stays hot while it is used: a
// lease that ran out on a key seen within TTL is renewed by the next
// decision, which leases along with its own cost.
package tokenlease
