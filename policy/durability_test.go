package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestConfigDurability: 1,000 acknowledged writes (Doc.Update, as the
// admin API writes) on a Redis with AOF (fsync every second, as
// docker-compose.yml runs it), then SIGKILL to Redis: after a restart the
// stored configuration is the last acknowledged one, every write in it.
func TestConfigDurability(t *testing.T) {
	const writes = 1000
	rd := testenv.StartRedisAOF(t)
	c := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	st, err := NewRedisStore(c, StoreSettings{Prefix: "dur:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	doc := NewDoc(st)
	if _, err := doc.Seed(ctx, testConfig(), t0, 0); err != nil {
		t.Fatal(err)
	}
	for i := range writes {
		key := fmt.Sprintf("d%d", i)
		_, err := doc.Update(ctx, Write{Who: "alice"}, func(s *Snapshot) (Change, error) {
			s.Config.Assignments[key] = "premium"
			return Change{Action: "key.assign", Resource: "keys/" + key, After: "premium"}, nil
		})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	rd.Kill()
	rd.Start()
	got, err := Load(ctx, st)
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
