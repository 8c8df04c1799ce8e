package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrVersionChanged reports that the stored configuration is not at the
// version a Replace was told to replace: someone wrote it in between.
var ErrVersionChanged = errors.New("policy: the stored config changed")

// VersionError is an ErrVersionChanged naming both versions.
type VersionError struct {
	Want int64 // the version the caller read (0: an empty store)
	Got  int64 // the version stored now
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("policy: the stored config is at version %d, not at version %d as read: it changed in between; nothing was written",
		e.Got, e.Want)
}

// Unwrap makes a VersionError an ErrVersionChanged.
func (e *VersionError) Unwrap() error { return ErrVersionChanged }

// ReplaceSettings configures Replace. The zero value replaces only an
// empty store.
type ReplaceSettings struct {
	// IfVersion is the version the caller read and means to replace (0:
	// an empty store), as If-Match does for one resource: another version
	// stored gives a *VersionError and writes nothing.
	IfVersion int64
	// Force replaces whatever version is stored; IfVersion is ignored.
	Force bool
	// Who is the "who" of the audit entry and of Snapshot.UpdatedBy.
	// Empty means "import".
	Who string
	// Now is the clock of the write; nil means time.Now.
	Now func() time.Time
}

// Replace makes cfg the stored configuration (tiers, rules, default and
// anonymous tier, assignments) in one atomic write with one audit entry
// ("config.replace"), after the checks of an admin API write. Pins stay,
// but those of tiers cfg drops. Resources that change get new revisions,
// so their ETags change and no others do. It returns the snapshot stored
// now and whether it wrote: a store already holding cfg is left as it is.
// A lost race with another writer is retried, subject to IfVersion again.
func Replace(ctx context.Context, st Store, cfg Config, s ReplaceSettings) (Snapshot, bool, error) {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Who == "" {
		s.Who = "import"
	}
	var l loader
	for range MaxSwapAttempts {
		cur, raw, err := l.load(ctx, st)
		bad := errors.Is(err, ErrBadStored)
		if err != nil && !bad {
			return Snapshot{}, false, err
		}
		if !s.Force && cur.Version != s.IfVersion {
			return cur, false, &VersionError{Want: s.IfVersion, Got: cur.Version}
		}
		if raw != nil && !bad && sameConfig(cur.Config, cfg) {
			return cur, false, nil
		}
		next, entry := replaced(cur, cfg, s.Now().UTC(), s.Who)
		if err := check(next); err != nil {
			return Snapshot{}, false, err
		}
		ok, err := st.Swap(ctx, raw, canonical(next), auditEntry(entry, DefaultMaxAuditEntryBytes))
		if err != nil {
			return Snapshot{}, false, fmt.Errorf("policy: replace config: %w", err)
		}
		if ok {
			return next, true, nil
		}
	}
	return Snapshot{}, false, fmt.Errorf("policy: replace config: lost the race with other writers %d times; retry", MaxSwapAttempts)
}

// replaced is cur with its Config replaced by cfg, and the audit entry.
func replaced(cur Snapshot, cfg Config, now time.Time, who string) (Snapshot, AuditEntry) {
	next := cur.clone()
	next.Version, next.UpdatedAt, next.UpdatedBy = cur.Version+1, now, who
	if next.Generation == "" {
		next.Generation = newGeneration()
	}
	pruneExpiredPins(&next, now)
	old := next.Config
	next.Config = Snapshot{Config: cfg}.clone().Config
	for name, t := range next.Config.Tiers {
		if o, ok := old.Tiers[name]; !ok || !bytes.Equal(canonical(o), canonical(t)) {
			next.touch("tiers/" + name)
		}
	}
	for name := range old.Tiers {
		if _, ok := next.Config.Tiers[name]; !ok {
			next.DropTier(name)
		}
	}
	if !bytes.Equal(canonical(cur.Rules()), canonical(next.Rules())) {
		next.touch("rules")
	}
	for k, t := range next.Config.Assignments {
		if o, ok := old.Assignments[k]; !ok || o != t {
			next.touch("keys/" + k)
		}
	}
	for k := range old.Assignments {
		if _, ok := next.Config.Assignments[k]; !ok {
			next.forget("keys/" + k)
		}
	}
	entry := AuditEntry{At: now, Who: who, Action: "config.replace", Resource: "config",
		Version: next.Version, Before: canonical(old), After: canonical(next.Config)}
	return next, entry
}

// sameConfig reports whether a and b say the same, taking absent and
// empty lists and maps as equal.
func sameConfig(a, b Config) bool {
	return bytes.Equal(canonical(normalConfig(a)), canonical(normalConfig(b)))
}

func normalConfig(c Config) Config {
	if len(c.Tiers) == 0 {
		c.Tiers = nil
	}
	if len(c.Rules) == 0 {
		c.Rules = nil
	}
	if len(c.Assignments) == 0 {
		c.Assignments = nil
	}
	return c
}
