package policy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// storeConformance runs the Store contract against st; corrupt writes a
// raw current document the way an operator editing the key would.
func storeConformance(t *testing.T, st Store, corrupt func([]byte)) {
	ctx := context.Background()
	if cur, good, err := st.Get(ctx); err != nil || cur != nil || good != nil {
		t.Fatalf("empty store: %q %q %v", cur, good, err)
	}
	sub, err := st.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := []byte(`{"v":1}`), []byte(`{"v":2}`)
	swap := func(old, next []byte, entry string, want bool) {
		t.Helper()
		if ok, err := st.Swap(ctx, old, next, []byte(entry)); err != nil || ok != want {
			t.Fatalf("Swap(%s → %s) = %v %v, want %v", old, next, ok, err, want)
		}
	}
	swap([]byte{}, v1, "x", false) // absent is not the empty document
	swap(nil, v1, "a", true)
	select {
	case <-sub:
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after Swap")
	}
	swap(nil, v2, "x", false)
	swap(v2, v2, "x", false)
	swap(v1, v2, "b", true)
	if cur, good, _ := st.Get(ctx); string(cur) != string(v2) || string(good) != string(v2) {
		t.Fatalf("after swaps: %s %s", cur, good)
	}
	corrupt([]byte("garbage"))
	if cur, good, _ := st.Get(ctx); string(cur) != "garbage" || string(good) != string(v2) {
		t.Fatalf("after corrupt: %s %s", cur, good)
	}
	swap(v2, v1, "x", false)
	swap([]byte("garbage"), v1, "c", true)
	if a, _ := st.Audit(ctx, 10); len(a) != 3 || string(a[0]) != "c" || string(a[2]) != "a" {
		t.Fatalf("audit %q", a)
	}
	if a, _ := st.Audit(ctx, 0); len(a) != 0 {
		t.Fatalf("audit(0) %q", a)
	}
}

func TestStoreConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		m, err := NewMemoryStore(StoreSettings{})
		if err != nil {
			t.Fatal(err)
		}
		storeConformance(t, m, m.put)
	})
	t.Run("redis", func(t *testing.T) {
		rc := testenv.StartRedis(t).Client()
		st, err := NewRedisStore(rc, StoreSettings{})
		if err != nil {
			t.Fatal(err)
		}
		storeConformance(t, st, func(b []byte) {
			if err := rc.Set(context.Background(), "throttled:{config}", b, 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("cluster", func(t *testing.T) {
		cl := testenv.StartCluster(t).Client(t)
		st, err := NewRedisStore(cl, StoreSettings{})
		if err != nil {
			t.Fatal(err)
		}
		storeConformance(t, st, func(b []byte) {
			if err := cl.Set(context.Background(), "throttled:{config}", b, 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestStoreSettings(t *testing.T) {
	if _, err := NewMemoryStore(StoreSettings{AuditLimit: -1}); err == nil {
		t.Error("negative AuditLimit accepted")
	}
	if _, err := NewRedisStore(nil, StoreSettings{}); err == nil {
		t.Error("nil client accepted")
	}
}

// A Doc serves the last good document while the stored one does not
// decode or validate (admin's TestBadStoredConfigKeepsLastGood goes through
// every kind of bad document), and its next write replaces it.
func TestDocKeepsLastGood(t *testing.T) {
	f := newFixture(t)
	f.setTier("free", Tier{Rate: 42, Period: sec(1)})
	ctx := context.Background()
	for _, bad := range []string{"garbage",
		`{"version":9,"config":{"tiers":{"free":{"rate":20000,"period":"1s","algorithm":"sliding_window_log"}}}}`} {
		f.set([]byte(bad))
		if s, err := f.doc.Load(ctx); !errors.Is(err, ErrBadStored) || s.Config.Tiers["free"].Rate != 42 {
			t.Fatalf("%s: Doc.Load = v%d %v", bad, s.Version, err)
		}
	}
	f.setTier("free", Tier{Rate: 43, Period: sec(1)})
	if s := f.snapshot(); s.Config.Tiers["free"].Rate != 43 || s.Version != 3 {
		t.Fatalf("write over a bad document: %+v", s)
	}
}
