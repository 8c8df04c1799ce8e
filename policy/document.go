package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultMaxAuditEntryBytes bounds one audit entry (16 KiB): a larger one
// keeps who, when, what and the version, and its before and after give way
// to their sizes and SHA-256 digests.
const DefaultMaxAuditEntryBytes = 16 << 10

// MaxSwapAttempts bounds how often a write reads the store again after
// losing a race with another writer (ErrContended).
const MaxSwapAttempts = 32

// Errors of Doc.Update besides validation (*FieldError) and the Edit's own.
var (
	// ErrUnavailable wraps a failure to read or write the store.
	ErrUnavailable = errors.New("policy: config store unavailable")
	// ErrContended reports a write that lost the race with other writers
	// MaxSwapAttempts times.
	ErrContended = errors.New("policy: lost the race with other writers")
)

// Doc is one process's access to the configuration document in a Store,
// for reads and writes: it validates what it reads, serves the last good
// document when the stored one is bad, and remembers the newest valid
// document it read or wrote, so that a store that lost data is noticed
// (ErrStoreReset) rather than followed. It is safe for concurrent use.
type Doc struct {
	st Store
	l  loader
}

// NewDoc returns a Doc of st.
func NewDoc(st Store) *Doc { return &Doc{st: st} }

// Load returns the configuration to serve: the current document, or with
// an error wrapping ErrBadStored the last good one, or with an error
// wrapping ErrStoreReset the configuration in force. Other errors are the
// store's, with a zero Snapshot.
func (d *Doc) Load(ctx context.Context) (Snapshot, error) {
	s, _, err := d.l.load(ctx, d.st)
	return s, err
}

// Seed makes cfg version 1 of an empty store (audit "config.seed") and
// returns the configuration in force. A store that holds a document is
// left as it is (another instance seeded it first); a bad one gives the
// last good snapshot and an error wrapping ErrBadStored. An empty cfg (the
// zero Config) seeds nothing: the store stays empty until the first write
// makes version 1. An invalid cfg is a *FieldError, and nothing is written.
func (d *Doc) Seed(ctx context.Context, cfg Config, now time.Time, maxAuditEntryBytes int) (Snapshot, error) {
	snap, raw, err := d.l.load(ctx, d.st)
	switch {
	case errors.Is(err, ErrBadStored):
		return snap, err
	case err != nil:
		return snap, fmt.Errorf("policy: load config: %w", err)
	case raw != nil || sameConfig(cfg, Config{}):
		return snap, nil
	}
	seed := Snapshot{Config: cfg, Version: 1, UpdatedAt: now.UTC(), UpdatedBy: "initial", Generation: newGeneration()}
	if err := check(seed); err != nil {
		return Snapshot{}, err
	}
	entry := AuditEntry{At: seed.UpdatedAt, Who: seed.UpdatedBy, Action: "config.seed", Resource: "config",
		Version: 1, Before: canonical(nil), After: canonical(seed.Config)}
	ok, err := d.st.Swap(ctx, nil, canonical(seed), auditEntry(entry, maxAuditEntryBytes))
	if err != nil {
		return Snapshot{}, fmt.Errorf("policy: seed config: %w", err)
	}
	if !ok { // another instance seeded first
		return d.Load(ctx)
	}
	d.l.wrote(seed)
	return seed, nil
}

// Change is what an Edit did: the audit log's action ("tier.create") and
// resource ("tiers/free"), and the resource before and after (nil: JSON
// null). The resource is recorded as written by the new version, or as gone
// when After is nil, so that its ETag changes.
type Change struct {
	Action, Resource string
	Before, After    any
}

// Edit changes s, a copy of the current snapshot whose Version, UpdatedAt
// and UpdatedBy are already the new ones and whose expired pins are gone.
// It checks its preconditions itself, so that they are judged on the very
// snapshot the write replaces. Its error aborts the write and is returned
// as is.
type Edit func(s *Snapshot) (Change, error)

// Write says who writes, and how, for Doc.Update.
type Write struct {
	Who string           // the audit entry's "who" and Snapshot.UpdatedBy
	Now func() time.Time // nil: time.Now
	// MaxAuditEntryBytes bounds the audit entry; 0 means
	// DefaultMaxAuditEntryBytes.
	MaxAuditEntryBytes int
	// OnConflict, if set, is told each time a write lost the race with
	// another writer and starts again.
	OnConflict func()
}

// Update applies edit to the current snapshot, validates the whole result
// and swaps it in atomically with its audit entry. When another writer got
// there first it starts again from the new snapshot (up to MaxSwapAttempts
// times, then ErrContended), so preconditions and validation always hold
// for what is written. A store that was reset is refused with an error
// wrapping ErrStoreReset (after writing the configuration in force back
// into a store that lost it), whose text says what to do; store failures
// wrap ErrUnavailable.
func (d *Doc) Update(ctx context.Context, w Write, edit Edit) (Snapshot, error) {
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.MaxAuditEntryBytes == 0 {
		w.MaxAuditEntryBytes = DefaultMaxAuditEntryBytes
	}
	for range MaxSwapAttempts {
		cur, raw, err := d.l.load(ctx, d.st)
		if errors.Is(err, ErrStoreReset) {
			return Snapshot{}, d.refuseReset(ctx, raw, cur, err, w.Now())
		}
		if err != nil && !errors.Is(err, ErrBadStored) {
			return Snapshot{}, fmt.Errorf("%w: read: %w", ErrUnavailable, err)
		}
		now := w.Now().UTC()
		next := cur.clone()
		next.Version, next.UpdatedAt, next.UpdatedBy = cur.Version+1, now, w.Who
		if next.Generation == "" { // a document from before generations
			next.Generation = newGeneration()
		}
		pruneExpiredPins(&next, now)
		ch, err := edit(&next)
		if err != nil {
			return Snapshot{}, err
		}
		if ch.After != nil {
			next.touch(ch.Resource)
		} else {
			next.forget(ch.Resource)
		}
		if err := check(next); err != nil {
			return Snapshot{}, err
		}
		entry := AuditEntry{At: now, Who: w.Who, Action: ch.Action, Resource: ch.Resource,
			Version: next.Version, Before: canonical(ch.Before), After: canonical(ch.After)}
		ok, err := d.st.Swap(ctx, raw, canonical(next), auditEntry(entry, w.MaxAuditEntryBytes))
		if err != nil {
			return Snapshot{}, fmt.Errorf("%w: write: %w", ErrUnavailable, err)
		}
		if ok {
			d.l.wrote(next)
			return next, nil
		}
		if w.OnConflict != nil {
			w.OnConflict()
		}
	}
	return Snapshot{}, fmt.Errorf("%w %d times; retry", ErrContended, MaxSwapAttempts)
}

// refuseReset is the error of a write against a reset store (err wraps
// ErrStoreReset): nothing applied. A store that lost data gets the
// configuration in force (snap) back first, so that a retry applies to it.
func (d *Doc) refuseReset(ctx context.Context, raw []byte, snap Snapshot, err error, now time.Time) error {
	next := "GET the configuration now stored, check it and retry"
	if storeLost(err) {
		next = fmt.Sprintf("the configuration in force (version %d) is restored; GET it, check and retry", snap.Version)
		if _, rerr := restore(ctx, d.st, raw, snap, now); rerr != nil {
			next = fmt.Sprintf("restoring the configuration in force (version %d) failed, retry later", snap.Version)
			err = errors.Join(err, rerr)
		}
	}
	return fmt.Errorf("%w: this write was not applied; %s", err, next)
}

// DropTier deletes a tier, its pin and their revisions.
func (s *Snapshot) DropTier(name string) {
	delete(s.Config.Tiers, name)
	s.forget("tiers/" + name)
	delete(s.Pins, name)
	s.forget("pins/" + name)
}

// touch records that the snapshot's version wrote resource.
func (s *Snapshot) touch(resource string) {
	if s.Revisions == nil {
		s.Revisions = map[string]int64{}
	}
	s.Revisions[resource] = s.Version
}

// forget drops a deleted resource's revision.
func (s *Snapshot) forget(resource string) { delete(s.Revisions, resource) }

func pruneExpiredPins(s *Snapshot, now time.Time) {
	for t, p := range s.Pins {
		if !p.Active(now) {
			delete(s.Pins, t)
			s.forget("pins/" + t)
		}
	}
}

// omitted stands in an audit entry for a before or after too large to keep.
type omitted struct {
	Omitted bool   `json:"omitted"`
	Bytes   int    `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// auditEntry is e's stored form, at most max bytes: when e is larger, its
// before and after are replaced by their sizes and digests.
func auditEntry(e AuditEntry, max int) []byte {
	b := canonical(e)
	if len(b) <= max {
		return b
	}
	for _, v := range []*json.RawMessage{&e.Before, &e.After} {
		sum := sha256.Sum256(*v)
		*v = canonical(omitted{Omitted: true, Bytes: len(*v), SHA256: hex.EncodeToString(sum[:])})
	}
	return canonical(e)
}
