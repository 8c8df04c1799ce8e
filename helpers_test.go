package throttled

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// policyStore is the admin configuration store on the Redis at url
// (prefix throttled:), closed when the test ends.
func policyStore(t *testing.T, url string) policy.Store {
	t.Helper()
	c, err := OpenRedis(&config.RedisConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st, err := policy.NewRedisStore(c, policy.StoreSettings{Prefix: "throttled:"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// storeWith stores c's tiers, rules and assignments in the Redis at url,
// as version 1 written by another instance.
func storeWith(t *testing.T, url string, c *config.Config) {
	t.Helper()
	if _, _, err := policy.Replace(context.Background(), policyStore(t, url), c.Policy(), policy.ReplaceSettings{}); err != nil {
		t.Fatal(err)
	}
}

// storedConfig loads the configuration stored at url.
func storedConfig(t *testing.T, url string) policy.Snapshot {
	t.Helper()
	snap, err := policy.Load(context.Background(), policyStore(t, url))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// run builds cfg's Instance and runs it until the test ends.
func run(t *testing.T, cfg *config.Config) *Instance {
	t.Helper()
	s, err := New(context.Background(), cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = s.Close() })
	return s
}

// onRedis builds the Instance of the configuration src on Redis r,
// closed when the test ends.
func onRedis(t *testing.T, r *testenv.Redis, src string) *Instance {
	t.Helper()
	cfg, err := config.Parse([]byte(src), []string{"THROTTLED_REDIS_URL=" + r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
