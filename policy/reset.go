package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// ErrStoreReset reports a config store that no longer holds the
// configuration in force: it lost its data (Redis restarted empty, a
// failover to a replica that lagged) or someone seeded it anew. Writes are
// refused with 409 once; a store that holds less than what is in force is
// restored from it (the Watcher and the refused write do so).
//
// Every stored document carries a generation, a random name given when an
// empty store is seeded; versions only grow within a generation. So a store
// that is empty, or older than the configuration in force, lost data.
var ErrStoreReset = errors.New("policy: config store was reset")

// resetError is an ErrStoreReset; lost means the store holds less than the
// configuration in force, which should be written back.
type resetError struct {
	lost bool
	msg  string
}

func (e *resetError) Error() string { return ErrStoreReset.Error() + ": " + e.msg }
func (e *resetError) Unwrap() error { return ErrStoreReset }

// checkReset compares what the store holds (Version 0: nothing) with best,
// the newest valid configuration the caller read from it (Version 0: none).
// A best without a generation (a document from before generations) is
// followed by any document at least as new, without a reset.
func checkReset(stored, best Snapshot) *resetError {
	switch {
	case best.Version == 0:
		return nil
	case stored.Version == 0:
		return &resetError{lost: true, msg: fmt.Sprintf("it is empty, but version %d (generation %s) was in force",
			best.Version, best.Generation)}
	case (stored.Generation == best.Generation || best.Generation == "") && stored.Version >= best.Version:
		return nil
	case stored.Version < best.Version:
		return &resetError{lost: true, msg: fmt.Sprintf("it holds version %d (generation %s), older than version %d (generation %s) in force",
			stored.Version, stored.Generation, best.Version, best.Generation)}
	}
	return &resetError{msg: fmt.Sprintf("generation %s (version %d) replaced generation %s (version %d)",
		stored.Generation, stored.Version, best.Generation, best.Version)}
}

// storeLost reports whether err says the store holds less than the
// configuration in force.
func storeLost(err error) bool {
	var re *resetError
	return errors.As(err, &re) && re.lost
}

// newGeneration names a new generation of the stored configuration.
func newGeneration() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// restore writes best back into a store found lost; raw is what it holds
// now (nil: nothing). It reports false when another writer changed the
// store first (which then holds something newer, or restores it too).
func restore(ctx context.Context, st Store, raw []byte, best Snapshot, now time.Time) (bool, error) {
	entry := AuditEntry{At: now.UTC(), Who: "throttled", Action: "config.restore", Resource: "config",
		Version: best.Version, Before: canonical(nil), After: canonical(best.Config)}
	ok, err := st.Swap(ctx, raw, canonical(best), auditEntry(entry, DefaultMaxAuditEntryBytes))
	if err != nil {
		return false, fmt.Errorf("policy: restore version %d: %w", best.Version, err)
	}
	return ok, nil
}
