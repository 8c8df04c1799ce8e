package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// MemoryPolicy is what Redis does when it reaches maxmemory, as it bears on
// the buckets.
type MemoryPolicy struct {
	Policy    string // maxmemory-policy
	MaxMemory int64  // maxmemory in bytes; 0: no limit
	// Risk says what can go wrong, "" when nothing: every bucket key has a
	// TTL, so the allkeys-* and volatile-{lru,lfu,random} policies can
	// evict live buckets (and allkeys-* the admin configuration), and
	// noeviction with a limit turns writes, so decisions, into errors.
	// volatile-ttl evicts the keys closest to expiry first: buckets that
	// have nearly refilled, whose loss admits almost nothing extra.
	Risk string
}

// CheckMemoryPolicy reads maxmemory and maxmemory-policy (CONFIG GET) and
// judges them.
func CheckMemoryPolicy(ctx context.Context, c redis.UniversalClient) (MemoryPolicy, error) {
	vals, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return MemoryPolicy{}, fmt.Errorf("redisstore: CONFIG GET maxmemory*: %w", err)
	}
	mp := MemoryPolicy{Policy: vals["maxmemory-policy"]}
	mp.MaxMemory, _ = strconv.ParseInt(vals["maxmemory"], 10, 64)
	mp.Risk = policyRisk(mp.Policy, mp.MaxMemory)
	return mp, nil
}

func policyRisk(policy string, maxmemory int64) string {
	switch policy {
	case "allkeys-lru", "allkeys-lfu", "allkeys-random":
		return "can evict live buckets and the admin configuration when memory is full: use volatile-ttl"
	case "volatile-lru", "volatile-lfu", "volatile-random":
		return "can evict live buckets (every bucket has a TTL) when memory is full: use volatile-ttl"
	case "noeviction":
		if maxmemory > 0 {
			return "turns writes into errors when memory is full: decisions then fall back; use volatile-ttl"
		}
	}
	return ""
}
