package policy

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func sec(n int) Duration { return Duration(time.Duration(n) * time.Second) }

func testConfig() Config {
	return Config{
		Tiers: map[string]Tier{
			"free":    {Rate: 10, Period: sec(1), Burst: 20, Priority: 10, Beta: 0.5},
			"premium": {Rate: 100, Period: sec(1), Priority: 1, Algorithm: "gcra", Beta: 0.9},
		},
		Rules:       []Rule{{Name: "api", Match: Match{Path: "/api"}, Key: KeySources{"api_key"}}},
		DefaultTier: "free",
		Assignments: map[string]string{"k1": "premium"},
	}
}

// fixture is a RedisStore on a real redis-server, seeded with testConfig
// through a Doc that writes as an admin API would.
type fixture struct {
	t     *testing.T
	rc    *redis.Client
	store *RedisStore
	clock *fakeclock.Clock
	doc   *Doc
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, rc: testenv.StartRedis(t).Client(), clock: fakeclock.New(t0)}
	st, err := NewRedisStore(f.rc, StoreSettings{Prefix: "test:"})
	if err != nil {
		t.Fatal(err)
	}
	f.store, f.doc = st, NewDoc(st)
	if _, err := f.doc.Seed(context.Background(), testConfig(), f.clock.Now(), 0); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	return f
}

// update writes through the fixture's Doc, failing on any error.
func (f *fixture) update(edit Edit) Snapshot {
	f.t.Helper()
	s, err := f.doc.Update(context.Background(), Write{Who: "alice", Now: f.clock.Now}, edit)
	if err != nil {
		f.t.Fatalf("Update: %v", err)
	}
	return s
}

// setTier replaces tier name, as PUT /v1/tiers/{name} does.
func (f *fixture) setTier(name string, t Tier) Snapshot {
	f.t.Helper()
	return f.update(func(s *Snapshot) (Change, error) {
		s.Config.Tiers[name] = t
		return Change{Action: "tier.replace", Resource: "tiers/" + name, After: t}, nil
	})
}

// pin pins tier's multiplier for ttl, as POST /v1/multipliers/{tier}/pin does.
func (f *fixture) pin(tier string, m float64, ttl time.Duration) Snapshot {
	f.t.Helper()
	return f.update(func(s *Snapshot) (Change, error) {
		if s.Pins == nil {
			s.Pins = map[string]Pin{}
		}
		p := Pin{Tier: tier, Multiplier: m, Until: s.UpdatedAt.Add(ttl)}
		s.Pins[tier] = p
		return Change{Action: "pin.set", Resource: "pins/" + tier, After: p}, nil
	})
}

// raw returns the stored document bytes, straight from Redis.
func (f *fixture) raw() []byte {
	f.t.Helper()
	b, err := f.rc.Get(context.Background(), f.store.Key()).Bytes()
	if err != nil {
		f.t.Fatalf("GET %s: %v", f.store.Key(), err)
	}
	return b
}

// snapshot loads the stored configuration, failing on any error.
func (f *fixture) snapshot() Snapshot {
	f.t.Helper()
	s, err := Load(context.Background(), f.store)
	if err != nil {
		f.t.Fatalf("Load: %v", err)
	}
	return s
}

// set writes the stored document straight into Redis, as an operator
// editing the key by hand would (no notification).
func (f *fixture) set(raw []byte) {
	f.t.Helper()
	if err := f.rc.Set(context.Background(), f.store.Key(), raw, 0).Err(); err != nil {
		f.t.Fatalf("SET %s: %v", f.store.Key(), err)
	}
}
