package policy

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// replaceSettings replaces version v at the fixture's clock.
func (f *fixture) replaceSettings(v int64) ReplaceSettings {
	return ReplaceSettings{IfVersion: v, Who: "import", Now: f.clock.Now}
}

// Replace writes the new configuration at once, with one audit entry; the
// revisions (whence ETags) of the resources it changed change and the
// others stay, so If-Match held by API clients keeps its meaning.
func TestReplaceWritesChangesOnly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	revs := f.snapshot().Revisions
	cfg := testConfig()
	cfg.Tiers["free"] = Tier{Rate: 3, Period: sec(1), Burst: 20, Priority: 10, Beta: 0.5}
	cfg.Assignments["k2"] = "free"
	snap, wrote, err := Replace(ctx, f.store, cfg, f.replaceSettings(1))
	if err != nil || !wrote || snap.Version != 2 || snap.UpdatedBy != "import" {
		t.Fatalf("Replace: version %d, wrote %v, by %q, err %v; want version 2 written by import", snap.Version, wrote, snap.UpdatedBy, err)
	}
	if got := f.snapshot(); got.Version != 2 || got.Config.Tiers["free"].Rate != 3 || got.Config.Assignments["k2"] != "free" {
		t.Fatalf("stored: version %d, %+v", got.Version, got.Config)
	}
	for r, changed := range map[string]bool{"tiers/free": true, "tiers/premium": false, "rules": false, "keys/k1": false, "keys/k2": true} {
		if now := snap.Revisions[r]; (now != revs[r]) != changed {
			t.Errorf("%s: revision %d → %d, want changed=%v", r, revs[r], now, changed)
		}
	}
	audit, err := f.store.Audit(ctx, 10)
	if err != nil || len(audit) != 2 || !strings.Contains(string(audit[0]), `"action":"config.replace"`) ||
		!strings.Contains(string(audit[0]), `"who":"import"`) {
		t.Fatalf("audit: %s, %v; want a config.replace entry on top of the seed", audit, err)
	}
}

// A store changed since the version was read is not written, and the
// error names both versions.
func TestReplaceStaleVersion(t *testing.T) {
	f := newFixture(t)
	f.setTier("free", Tier{Rate: 7, Period: sec(1), Priority: 10})
	before := f.raw()
	cfg := testConfig()
	cfg.Tiers["free"] = Tier{Rate: 3, Period: sec(1), Priority: 10}
	_, wrote, err := Replace(context.Background(), f.store, cfg, f.replaceSettings(1))
	var ve *VersionError
	if wrote || !errors.As(err, &ve) || ve.Want != 1 || ve.Got != 2 || !errors.Is(err, ErrVersionChanged) {
		t.Fatalf("wrote %v, err %v; want a VersionError 1 → 2", wrote, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "version 2") || !strings.Contains(msg, "version 1") {
		t.Fatalf("error %q does not name both versions", msg)
	}
	if after := f.raw(); !bytes.Equal(before, after) {
		t.Fatalf("a refused Replace changed the store")
	}
	// Force writes over it.
	snap, wrote, err := Replace(context.Background(), f.store, cfg, ReplaceSettings{Force: true, Now: f.clock.Now})
	if err != nil || !wrote || snap.Version != 3 || snap.Config.Tiers["free"].Rate != 3 {
		t.Fatalf("forced: version %d, wrote %v, err %v", snap.Version, wrote, err)
	}
}

// The same configuration is not written again: the version, the ETags
// and the audit log stay. Absent and empty lists count as equal.
func TestReplaceSameIsNoWrite(t *testing.T) {
	f := newFixture(t)
	before := f.raw()
	cfg := testConfig()
	cfg.Rules[0].Match.Methods = []string{}
	snap, wrote, err := Replace(context.Background(), f.store, cfg, f.replaceSettings(1))
	if err != nil || wrote || snap.Version != 1 {
		t.Fatalf("version %d, wrote %v, err %v; want no write at version 1", snap.Version, wrote, err)
	}
	if !bytes.Equal(before, f.raw()) {
		t.Fatal("an equal configuration was written")
	}
}

// A tier the new configuration drops loses its pin with it (as DELETE
// /v1/tiers does); other pins stay.
func TestReplaceDropsPinsOfDroppedTiers(t *testing.T) {
	f := newFixture(t)
	for _, tier := range []string{"free", "premium"} {
		f.pin(tier, 0.5, 10*time.Minute)
	}
	cfg := testConfig()
	delete(cfg.Tiers, "premium")
	cfg.Assignments = nil
	snap, _, err := Replace(context.Background(), f.store, cfg, f.replaceSettings(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Pins["premium"]; ok || len(snap.Pins) != 1 || snap.Revisions["pins/premium"] != 0 ||
		snap.Revisions["keys/k1"] != 0 || snap.Revisions["tiers/premium"] != 0 {
		t.Fatalf("pins %v, revisions %v: want only free's pin, no premium or k1 revisions", snap.Pins, snap.Revisions)
	}
}

// An invalid configuration is refused with the field and writes nothing,
// however forced.
func TestReplaceInvalid(t *testing.T) {
	f := newFixture(t)
	before := f.raw()
	cfg := testConfig()
	cfg.Assignments["k9"] = "gold"
	_, wrote, err := Replace(context.Background(), f.store, cfg, ReplaceSettings{Force: true})
	var fe *FieldError
	if wrote || !errors.As(err, &fe) || fe.Field != "assignments.k9.tier" {
		t.Fatalf("wrote %v, err %v; want a FieldError on assignments.k9.tier", wrote, err)
	}
	if !bytes.Equal(before, f.raw()) {
		t.Fatal("an invalid Replace changed the store")
	}
}

// An empty store is version 0: the zero settings replace it (seeding a
// generation), and then no longer.
func TestReplaceEmptyStore(t *testing.T) {
	st, err := NewMemoryStore(StoreSettings{})
	if err != nil {
		t.Fatal(err)
	}
	snap, wrote, err := Replace(context.Background(), st, testConfig(), ReplaceSettings{})
	if err != nil || !wrote || snap.Version != 1 || snap.Generation == "" {
		t.Fatalf("version %d, generation %q, wrote %v, err %v", snap.Version, snap.Generation, wrote, err)
	}
	if _, _, err := Replace(context.Background(), st, Config{}, ReplaceSettings{}); !errors.Is(err, ErrVersionChanged) {
		t.Fatalf("second zero-settings Replace: %v, want ErrVersionChanged", err)
	}
}
