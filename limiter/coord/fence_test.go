package coord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// mtFencedLeader returns a lease on the settings' leader key and a
// publisher fenced by it.
func mtFencedLeader(t *testing.T, c redis.UniversalClient, s Settings) (*Lease, *Publisher) {
	t.Helper()
	l, err := NewLease(c, s.LeaseKey(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s.Lease = l
	return l, mtPublisher(t, c, s)
}

// mtStaleLeaderFenced: a leader whose lease expired and was taken over
// cannot publish any more, at the new leader's epoch or above it.
func mtStaleLeaderFenced(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	s := mtSettings(Settings{})
	la, pa := mtFencedLeader(t, c, s)
	lb, pb := mtFencedLeader(t, c, s)
	if ok, err := la.Acquire(ctx); !ok || err != nil {
		t.Fatalf("a acquires: %v, %v", ok, err)
	}
	mtPublish(t, pa, mtSet(5, mt0, map[string]float64{"free": 0.5}))
	// a stalls; its lease expires and b takes it over.
	if err := c.Del(ctx, la.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := lb.Acquire(ctx); !ok || err != nil {
		t.Fatalf("b acquires: %v, %v", ok, err)
	}
	if lb.Fence() <= la.Fence() {
		t.Fatalf("fences a %d, b %d: want b's greater", la.Fence(), lb.Fence())
	}
	bset := mtSet(5, mt0.Add(time.Second), map[string]float64{"free": 0.9})
	mtPublish(t, pb, bset)
	for _, m := range []struct {
		what  string
		epoch uint64
	}{{"same epoch", 5}, {"higher epoch", 6}} {
		err := pa.Publish(ctx, mtSet(m.epoch, mt0.Add(2*time.Second), map[string]float64{"free": 0.1}))
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("stale leader publishes at the %s: err %v, want ErrFenced", m.what, err)
		}
	}
	if got, _, _ := pb.Load(ctx); !mtSame(got, bset) {
		t.Fatalf("after the stale leader's publishes, Load = %+v, want b's %+v", got, bset)
	}
	// Without the lease at all (expired, nobody took it), b is fenced too.
	if err := c.Del(ctx, lb.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := pb.Publish(ctx, mtSet(6, mt0.Add(3*time.Second), bset.Tiers)); !errors.Is(err, ErrFenced) {
		t.Fatalf("publishing without the lease: err %v, want ErrFenced", err)
	}
}

// TestFencedPublisherNeedsLeaseInItsSlot: a lease whose key is not in the
// hash's cluster slot cannot fence (the script could not read it there).
func TestFencedPublisherNeedsLeaseInItsSlot(t *testing.T) {
	s := Settings{Prefix: "x:"}
	l, err := NewLease(nil, "x:controller:leader", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.Lease = l
	if _, err := NewPublisher(nil, s); !errors.Is(err, ErrInvalid) {
		t.Fatalf("lease key in another slot: %v, want ErrInvalid", err)
	}
	for _, p := range []string{"x:", "", "throttled:prod:"} {
		s := Settings{Prefix: p}
		d, _ := s.withDefaults()
		if k := s.LeaseKey(); slotOf(k) != slotOf(d.key()) || slotOf(inSlotOf(k, ":fence")) != slotOf(k) {
			t.Errorf("prefix %q: LeaseKey %q or its fence is not in the slot of %q", p, k, d.key())
		}
	}
	for _, p := range []string{"a{b}:", "a{:", "}{"} {
		if _, err := NewPublisher(nil, Settings{Prefix: p}); !errors.Is(err, ErrInvalid) {
			t.Errorf("prefix %q: %v, want ErrInvalid", p, err)
		}
	}
	if _, err := NewLease(nil, "}x", time.Second); !errors.Is(err, ErrInvalid) {
		t.Errorf("lease key }x: %v, want ErrInvalid", err)
	}
	// Redis Cluster's own figures for CRC16 slots.
	for k, want := range map[string]uint16{"foo": 12182, "somekey": 11058, "{somekey}.x": 11058, "{}somekey": slotOf("{}somekey")} {
		if got := slotOf(k); got != want {
			t.Errorf("slotOf(%q) = %d, want %d", k, got, want)
		}
	}
}
