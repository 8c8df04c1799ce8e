package testenv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisStartsAndRestarts(t *testing.T) {
	r := StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	if c.Ping(ctx).Err() == nil {
		t.Fatal("PING succeeded after Kill")
	}
	r.Start()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
	// Persistence is off: the restarted server is empty.
	if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
		t.Fatalf("key survived a restart without persistence")
	}
}

func TestClusterSpreadsKeys(t *testing.T) {
	cl := StartCluster(t)
	c := cl.Client(t)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if err := c.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var masters atomic.Int32
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if err == nil && n > 0 {
			masters.Add(1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if masters.Load() != 3 {
		t.Fatalf("keys on %d masters, want 3", masters.Load())
	}
}

// TestClusterReplicates: each master has its own replica, in sync, that
// holds what was written to the master.
func TestClusterReplicates(t *testing.T) {
	cl := StartCluster(t)
	c := cl.Client(t)
	ctx := context.Background()
	for i, m := range cl.Masters {
		// A key of this master's slots.
		key := ""
		for j := 0; key == ""; j++ {
			k := fmt.Sprintf("r%d", j)
			if owner, err := c.MasterForKey(ctx, k); err == nil && owner.Options().Addr == m.Addr() {
				key = k
			}
		}
		// One connection each: WAIT and READONLY are per connection.
		mcl := redis.NewClient(&redis.Options{Addr: m.Addr()})
		rcl := redis.NewClient(&redis.Options{Addr: cl.Replicas[i].Addr()})
		mc, rc := mcl.Conn(), rcl.Conn()
		t.Cleanup(func() { _, _, _, _ = mc.Close(), rc.Close(), mcl.Close(), rcl.Close() })
		if err := mc.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := mc.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
			t.Fatalf("master %d (%s): WAIT 1 = %d, %v; want its replica to acknowledge", i, m.Addr(), n, err)
		}
		if err := rc.ReadOnly(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := rc.Get(ctx, key).Result(); err != nil || got != "v" {
			t.Fatalf("replica %d (%s) of %s: GET %s = %q, %v; want v", i, cl.Replicas[i].Addr(), m.Addr(), key, got, err)
		}
	}
}
