package api

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestConfigDurability: 1,000 acknowledged admin writes on a Redis with AOF
// (fsync every second, as docker-compose.yml runs it), then SIGKILL to
// Redis and the API: after a restart the stored configuration is the last
// acknowledged one, every write in it.
func TestConfigDurability(t *testing.T) {
	const writes = 1000
	rd := testenv.StartRedisAOF(t)
	c := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	st, err := NewRedisStore(c, StoreSettings{Prefix: "dur:"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(context.Background(), Settings{Store: st, Tokens: testTokens(), Initial: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPTest(t, srv)
	for i := range writes {
		want(t, doURL(t, hs.URL, "PUT", fmt.Sprintf("/v1/keys/d%d", i), writeTok, map[string]any{"tier": "premium"}), 201)
	}
	rd.Kill()
	hs.Close()
	rd.Start()
	got, err := Load(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for i := range writes {
		if got.Config.Assignments[fmt.Sprintf("d%d", i)] != "premium" {
			missing++
		}
	}
	if got.Version != 1+writes || missing > 0 {
		t.Fatalf("after SIGKILL and restart: version %d with %d of %d writes missing, want version %d with all",
			got.Version, missing, writes, 1+writes)
	}
}
