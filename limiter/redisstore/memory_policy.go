package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

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
	// Node is the host:port of the cluster node the answer came from, ""
	// on a single Redis.
	Node string
}

// CheckMemoryPolicy reads maxmemory and maxmemory-policy (CONFIG GET) and
// judges them. On a *redis.ClusterClient it reads every node that holds or
// may take over slots, masters and replicas (ForEachShard), and returns the
// riskiest answer: one with a Risk over one without, else the first by
// node address. A node that does not answer fails the whole check, the
// error naming it: the nodes that did answer say nothing about it.
func CheckMemoryPolicy(ctx context.Context, c redis.UniversalClient) (MemoryPolicy, error) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return checkClusterMemoryPolicy(ctx, cc)
	}
	mp, err := readMemoryPolicy(ctx, c)
	if err != nil {
		return MemoryPolicy{}, fmt.Errorf("redisstore: CONFIG GET maxmemory*: %w", err)
	}
	return mp, nil
}

// checkClusterMemoryPolicy is CheckMemoryPolicy on every node of a cluster.
// The nodes are read in parallel; mu guards the answers gathered.
func checkClusterMemoryPolicy(ctx context.Context, cc *redis.ClusterClient) (MemoryPolicy, error) {
	var (
		mu      sync.Mutex
		worst   MemoryPolicy
		failed  string // the first failing node by address
		nodeErr error  // its error
	)
	err := cc.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		addr := n.Options().Addr
		mp, err := readMemoryPolicy(ctx, n)
		mp.Node = addr
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil && (nodeErr == nil || addr < failed):
			failed, nodeErr = addr, err
		case err == nil && (worst.Node == "" || riskier(mp, worst)):
			worst = mp
		}
		return err
	})
	switch {
	case nodeErr != nil:
		return MemoryPolicy{}, fmt.Errorf("redisstore: CONFIG GET maxmemory* on %s: %w", failed, nodeErr)
	case err != nil:
		return MemoryPolicy{}, fmt.Errorf("redisstore: cluster nodes: %w", err)
	case worst.Node == "":
		return MemoryPolicy{}, errNoClusterNode
	}
	return worst, nil
}

var errNoClusterNode = errors.New("redisstore: no cluster node to read maxmemory-policy from")

// riskier reports whether a is to be reported over b: it has a risk and b
// none, or both or neither have and a's node comes first.
func riskier(a, b MemoryPolicy) bool {
	if (a.Risk != "") != (b.Risk != "") {
		return a.Risk != ""
	}
	return a.Node < b.Node
}

// readMemoryPolicy runs CONFIG GET maxmemory* on c and judges the answer.
func readMemoryPolicy(ctx context.Context, c redis.Cmdable) (MemoryPolicy, error) {
	vals, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return MemoryPolicy{}, err
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
