package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// failingStore is a Store whose reads fail or whose swaps always lose.
type failingStore struct {
	Store
	getErr error
	swaps  int
}

func (f *failingStore) Get(ctx context.Context) ([]byte, []byte, error) {
	if f.getErr != nil {
		return nil, nil, f.getErr
	}
	return f.Store.Get(ctx)
}

func (f *failingStore) Swap(context.Context, []byte, []byte, []byte) (bool, error) {
	f.swaps++
	return false, nil
}

func newMemDoc(t *testing.T) (*MemoryStore, *Doc) {
	t.Helper()
	st, err := NewMemoryStore(StoreSettings{})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDoc(st)
	if _, err := d.Seed(context.Background(), testConfig(), t0, 0); err != nil {
		t.Fatal(err)
	}
	return st, d
}

// Update records the change's resource as written by the new version, or
// as gone, with one audit entry; an Edit's error and an invalid result
// write nothing.
func TestDocUpdate(t *testing.T) {
	ctx := context.Background()
	st, d := newMemDoc(t)
	s, err := d.Update(ctx, Write{Who: "alice"}, func(s *Snapshot) (Change, error) {
		s.Config.Assignments["k2"] = "free"
		return Change{Action: "key.assign", Resource: "keys/k2", After: "free"}, nil
	})
	if err != nil || s.Version != 2 || s.Revisions["keys/k2"] != 2 || s.UpdatedBy != "alice" {
		t.Fatalf("assign: version %d, revisions %v, by %q, %v", s.Version, s.Revisions, s.UpdatedBy, err)
	}
	s, err = d.Update(ctx, Write{Who: "alice"}, func(s *Snapshot) (Change, error) {
		delete(s.Config.Assignments, "k2")
		return Change{Action: "key.unassign", Resource: "keys/k2", Before: "free"}, nil
	})
	if _, ok := s.Revisions["keys/k2"]; err != nil || ok || s.Version != 3 {
		t.Fatalf("unassign: version %d, revisions %v, %v", s.Version, s.Revisions, err)
	}
	before, _, _ := st.Get(ctx)
	mine := errors.New("precondition")
	if _, err := d.Update(ctx, Write{}, func(*Snapshot) (Change, error) { return Change{}, mine }); err != mine {
		t.Fatalf("edit error: %v, want it as is", err)
	}
	_, err = d.Update(ctx, Write{}, func(s *Snapshot) (Change, error) {
		s.Config.DefaultTier = "gold"
		return Change{Action: "x", Resource: "config", After: s.Config}, nil
	})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "default_tier" {
		t.Fatalf("invalid result: %v, want a FieldError naming default_tier", err)
	}
	if after, _, _ := st.Get(ctx); string(after) != string(before) {
		t.Fatal("a refused Update changed the store")
	}
	if audit, _ := st.Audit(ctx, 10); len(audit) != 3 || !strings.Contains(string(audit[0]), `"action":"key.unassign"`) {
		t.Fatalf("audit %s, want seed, assign, unassign", audit)
	}
}

// Store failures wrap ErrUnavailable; a write that always loses the race
// gives up after MaxSwapAttempts with ErrContended, telling OnConflict of
// every retry.
func TestDocUpdateFailures(t *testing.T) {
	ctx := context.Background()
	st, _ := newMemDoc(t)
	down := errors.New("connection refused")
	edit := func(s *Snapshot) (Change, error) {
		return Change{Action: "x", Resource: "rules", After: s.Rules()}, nil
	}
	if _, err := NewDoc(&failingStore{Store: st, getErr: down}).Update(ctx, Write{}, edit); !errors.Is(err, ErrUnavailable) || !errors.Is(err, down) {
		t.Fatalf("read failure: %v", err)
	}
	fs, conflicts := &failingStore{Store: st}, 0
	_, err := NewDoc(fs).Update(ctx, Write{OnConflict: func() { conflicts++ }}, edit)
	if !errors.Is(err, ErrContended) || fs.swaps != MaxSwapAttempts || conflicts != MaxSwapAttempts {
		t.Fatalf("%v after %d swaps and %d conflicts, want ErrContended after %d", err, fs.swaps, conflicts, MaxSwapAttempts)
	}
}

// A write to a store that lost its data is refused, saying so, and the
// configuration in force is written back, so that a retry applies to it.
func TestDocUpdateAfterStoreLost(t *testing.T) {
	ctx := context.Background()
	st, d := newMemDoc(t)
	edit := func(s *Snapshot) (Change, error) {
		s.Config.Assignments["k3"] = "free"
		return Change{Action: "key.assign", Resource: "keys/k3", After: "free"}, nil
	}
	wipe(st)
	_, err := d.Update(ctx, Write{}, edit)
	if !errors.Is(err, ErrStoreReset) || !strings.Contains(err.Error(), "this write was not applied") ||
		!strings.Contains(err.Error(), "restored") {
		t.Fatalf("%v, want ErrStoreReset saying the write was not applied and the configuration restored", err)
	}
	if s, _ := Load(ctx, st); s.Version != 1 || len(s.Config.Tiers) != 2 {
		t.Fatalf("store after the refusal: version %d, %d tiers; want the seed back", s.Version, len(s.Config.Tiers))
	}
	if s, err := d.Update(ctx, Write{}, edit); err != nil || s.Version != 2 {
		t.Fatalf("retry: version %d, %v", s.Version, err)
	}
}

// Seed writes version 1 of an empty store once; an empty Config seeds
// nothing and an invalid one is refused.
func TestDocSeed(t *testing.T) {
	ctx := context.Background()
	st, _ := NewMemoryStore(StoreSettings{})
	d := NewDoc(st)
	if s, err := d.Seed(ctx, Config{}, t0, 0); err != nil || s.Version != 0 {
		t.Fatalf("empty seed: version %d, %v", s.Version, err)
	}
	bad := testConfig()
	bad.DefaultTier = "gold"
	if _, err := d.Seed(ctx, bad, t0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid seed: %v", err)
	}
	if cur, _, _ := st.Get(ctx); cur != nil {
		t.Fatalf("store after refused seeds: %s", cur)
	}
	first, err := d.Seed(ctx, testConfig(), t0, 0)
	if err != nil || first.Version != 1 || first.Generation == "" {
		t.Fatalf("seed: %+v, %v", first, err)
	}
	other := testConfig()
	delete(other.Tiers, "premium")
	other.Assignments = nil
	if s, err := NewDoc(st).Seed(ctx, other, t0, 0); err != nil || s.Generation != first.Generation || len(s.Config.Tiers) != 2 {
		t.Fatalf("second seed: %+v, %v; want the first left as it is", s, err)
	}
}
