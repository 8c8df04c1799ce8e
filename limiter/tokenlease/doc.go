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
// store then; a renewal leases only what brings the tokens held back to
// Size, those held paying for part of the request). Unspent tokens live
// while their key is in use and are dropped once it was quiet for TTL
// (they are not given back: an instance that goes quiet under-admits by
// at most Size).
//
// # The table
//
// A lease record is kept for every key decided within TTL, at most
// Settings.MaxKeys (default 100,000) per store: a new key beyond it evicts
// the record of the key idle longest, whose unspent tokens are lost as a
// quiet key's are (under-admission, never over). Each shard keeps its
// records in the order they were used, so cold records and the one to
// evict are found at its end: a new key drops a few cold records (never a
// scan of the shard under its lock). Metrics (NewMetrics) reports
// throttled_lease_keys and throttled_lease_evictions_total.
//
// # When it leases
//
// Only while the request's multiplier is ≥ 1 (no shedding: a shed would
// spend quota but not admission, which a batch cannot split), only for
// token bucket, GCRA and leaky bucket rules, never for refunds or peeks,
// and only for a key seen within TTL (the first decision of a key is
// exact). Everything else is an exact decision of the shared store. A key
// stays hot while it is used: a lease holding less than a request's cost,
// on a key seen within TTL, is renewed by that request: the tokens held
// pay for part of its cost, and it leases the rest along with a batch. A
// lease the shared store refuses decides the rest exactly; when that is
// refused too, the tokens stay held.
//
// # In an outage
//
// A fallback store (limiter/fallback) raises its local share of a rule to
// at least a request's cost, so a lease of cost + Size would make each
// instance admit Size more than its share. When the shared store's answer
// comes from its fallback (Decision.Fallback), no key leases until an
// answer comes from the shared store itself: each request is decided with
// its own cost, and an instance admits its local share, as for a rule that
// does not lease. A lease the fallback granted as the outage began is
// dropped (its request is admitted). The tokens a key held when the outage
// began are still spent: they were spent in the shared store when leased.
//
// # What local decisions report
//
// Remaining and ResetAfter as an exact decision would (so do the decisions
// that lease, and those refused while the key holds tokens): the leasing
// algorithms refill their quota at Limit per Period up to the capacity, so
// each key keeps the instant its quota is whole again, counting its
// unspent leased tokens as the key's. A decision spent here moves it
// cost × Period/Limit past itself or now, whichever is later (a whole
// quota refills no further); Remaining is the capacity less the tokens
// that take until then to refill. Every answer of the
// shared store here (exact or lease, refunds and shedding too) leaves the
// instant no sooner than that answer says, less the tokens held here.
// What other instances spend counts from this instance's next shared
// decision for the key (at most Size decisions later while tokens are
// held); until then local decisions do not see it, and may report more
// Remaining and a sooner reset than the shared store would.
package tokenlease
