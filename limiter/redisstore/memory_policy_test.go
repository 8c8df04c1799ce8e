package redisstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

func TestCheckMemoryPolicy(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		policy, maxmemory, risk string // risk: a word of it, "" none
	}{
		{"noeviction", "0", ""},
		{"noeviction", "100mb", "writes into errors"},
		{"volatile-ttl", "100mb", ""},
		{"volatile-lru", "100mb", "evict live buckets"},
		{"allkeys-lru", "100mb", "admin configuration"},
		{"allkeys-random", "0", "evict live buckets"},
	} {
		for k, v := range map[string]string{"maxmemory-policy": tc.policy, "maxmemory": tc.maxmemory} {
			if err := c.ConfigSet(ctx, k, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
		mp, err := redisstore.CheckMemoryPolicy(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if mp.Policy != tc.policy || (tc.risk == "") != (mp.Risk == "") || !strings.Contains(mp.Risk, tc.risk) {
			t.Errorf("%s maxmemory %s: %+v, want risk %q", tc.policy, tc.maxmemory, mp, tc.risk)
		}
	}
}
