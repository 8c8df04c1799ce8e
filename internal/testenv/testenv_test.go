package testenv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

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
