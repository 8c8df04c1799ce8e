// Package policy is throttled's configuration of enforcement as one
// document: tiers, rules, client key → tier assignments and multiplier
// pins (Config, Snapshot). It owns
//
//   - the document's types, as JSON and YAML (a configuration file's tiers,
//     rules and assignments are a Config too);
//   - the one validator of a Config (ValidateConfig, ConfigErrors), naming
//     each problem's field ("tiers.free.rate", "rules[2].key"), and the one
//     table of bounds of its fields (TierBounds, RuleBounds, MultiplierBound).
//     Bound is the one bounds type: it checks a value, says what it wants and
//     publishes itself in JSON Schema (Bound.Schema); the configuration file's
//     own bounds are Bounds too, and the configuration's JSON Schema and the
//     admin API's OpenAPI document are checked against them. The lists,
//     patterns and bounds it shares with enforcement are limiter's,
//     limiter/enforce's and limiter/multiplier's, read from there;
//   - Compile: a Config to the enforce.Policy that enforcement runs;
//   - the versioned store of the document (Store: RedisStore, MemoryStore),
//     its reads and writes for a process (Doc, Load, Replace) and the
//     Watcher that carries every change to each enforcing instance.
//
// It imports limiter and its packages, never the admin API, the
// configuration file, the controller or the command.
//
// # Persistence and propagation
//
// The whole state is one JSON document (a Snapshot), written whole: a write
// reads it, validates the result and swaps the new document in only if the
// stored one is still byte-for-byte what it read (RedisStore: one Lua
// script comparing SHA-1s), retrying otherwise, so nothing is ever
// half-written. The swap also keeps a last_good copy, pushes the audit
// entry onto a capped list (StoreSettings.AuditLimit, default 1000, of
// entries of at most DefaultMaxAuditEntryBytes unless the writer says
// otherwise: an entry whose before and after are larger keeps their sizes
// and digests instead) and publishes on a channel. Load and a Doc serve the
// current document if it decodes and validates, else the last good copy,
// reporting ErrBadStored (a running Doc or Watcher keeps the last valid
// document it read, which is newer than the stored copy when someone wrote
// the key by hand). A Watcher in each enforcing instance reacts to the
// channel and also polls (default every second), delivering each new valid
// Snapshot to its callback, so a change reaches every instance within the
// poll interval even when a message is lost; Watcher.Pins gives the pins in
// force. MemoryStore has the same semantics without Redis.
//
// # Data loss
//
// Each document carries a generation, named when an empty store is seeded,
// and its version only grows within it. A store found empty or older than
// the newest document a Doc or Watcher read (Redis restarted without
// persistence, a failover to a lagging replica) never switches limiting off:
// the Watcher keeps the configuration in force and writes it back (audit
// "config.restore"), reads serve it, and a write is refused (ErrStoreReset)
// after writing it back, so a retry applies on top of it.
package policy
