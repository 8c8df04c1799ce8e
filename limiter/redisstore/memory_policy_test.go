package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// setPolicies sets maxmemory-policy on every node of cl to volatile-ttl,
// except on the nodes in risky, set to the policy given.
func setPolicies(t *testing.T, cl *testenv.Cluster, risky map[*testenv.Redis]string) {
	t.Helper()
	for _, n := range append(cl.Masters[:len(cl.Masters):len(cl.Masters)], cl.Replicas...) {
		p, ok := risky[n]
		if !ok {
			p = "volatile-ttl"
		}
		if err := n.Client().ConfigSet(context.Background(), "maxmemory-policy", p).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// listReplicas waits, bounded, until every node of cl lists the replicas in
// CLUSTER SLOTS, the slot map a cluster client reads: Redis leaves a replica
// out while its replication offset is 0, on idle masters until their first
// replication PING (10 s), so a write (FLUSHALL) on each master moves it on.
func listReplicas(t *testing.T, cl *testenv.Cluster) {
	t.Helper()
	ctx := context.Background()
	var cs []*redis.Client
	for _, n := range append(cl.Masters[:len(cl.Masters):len(cl.Masters)], cl.Replicas...) {
		cs = append(cs, n.Client())
	}
	for _, c := range cs[:len(cl.Masters)] {
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err = slotMapsList(ctx, cs); err == nil {
			return
		}
	}
	t.Fatalf("slot maps without every replica within 10 s: %v", err)
}

// slotMapsList says which node's CLUSTER SLOTS does not list every node.
// It sends the command as such (go-redis deprecates its ClusterSlots for
// CLUSTER SHARDS, but CLUSTER SLOTS is the map the cluster client reads):
// each slot range is [start, end, node…].
func slotMapsList(ctx context.Context, cs []*redis.Client) error {
	for _, c := range cs {
		slots, err := c.Do(ctx, "CLUSTER", "SLOTS").Slice()
		if err != nil {
			return err
		}
		listed := 0
		for _, r := range slots {
			if r, ok := r.([]any); ok && len(r) > 2 {
				listed += len(r) - 2
			}
		}
		if listed != len(cs) {
			return fmt.Errorf("%s lists %d nodes of %d", c.Options().Addr, listed, len(cs))
		}
	}
	return nil
}

// TestCheckMemoryPolicyClusterReadsEveryNode: on a cluster whose nodes are
// all on volatile-ttl but one, each master in turn and each replica (which
// takes over its master's slots on failover), the check reports that
// node's risky policy and its address; with two risky nodes, the first by
// address; with none, no risk.
func TestCheckMemoryPolicyClusterReadsEveryNode(t *testing.T) {
	cl := testenv.StartCluster(t)
	listReplicas(t, cl)
	c := cl.Client(t)
	ctx := context.Background()
	m, r := cl.Masters, cl.Replicas
	first, second := m[2], r[0]
	if second.Addr() < first.Addr() {
		first, second = second, first
	}
	for _, tc := range []struct {
		name  string
		risky map[*testenv.Redis]string
		want  *testenv.Redis // the node reported; nil: no risk
	}{
		{"master 0", map[*testenv.Redis]string{m[0]: "allkeys-lru"}, m[0]},
		{"master 1", map[*testenv.Redis]string{m[1]: "allkeys-lru"}, m[1]},
		{"master 2", map[*testenv.Redis]string{m[2]: "allkeys-lru"}, m[2]},
		{"replica 0", map[*testenv.Redis]string{r[0]: "allkeys-lru"}, r[0]},
		{"replica 1", map[*testenv.Redis]string{r[1]: "allkeys-lru"}, r[1]},
		{"replica 2", map[*testenv.Redis]string{r[2]: "allkeys-lru"}, r[2]},
		{"two risky", map[*testenv.Redis]string{first: "allkeys-lru", second: "volatile-lru"}, first},
		{"none", nil, nil},
	} {
		setPolicies(t, cl, tc.risky)
		for i := range m { // as many reads as masters: a round robin over them cannot pass
			mp, err := redisstore.CheckMemoryPolicy(ctx, c)
			if err != nil {
				t.Fatalf("%s, read %d: %v", tc.name, i, err)
			}
			switch {
			case tc.want == nil && (mp.Policy != "volatile-ttl" || mp.Risk != "" || mp.Node == ""):
				t.Errorf("%s, read %d: %+v, want volatile-ttl, no risk, a node", tc.name, i, mp)
			case tc.want != nil && (mp.Policy != tc.risky[tc.want] || mp.Risk == "" || mp.Node != tc.want.Addr()):
				t.Errorf("%s, read %d: %+v, want %s with a risk on %s", tc.name, i, mp, tc.risky[tc.want], tc.want.Addr())
			}
		}
	}
}

// TestCheckMemoryPolicyClusterNodeDown: a node that does not answer (a
// replica killed, still in the cluster's slot map) fails the whole check,
// the error naming it, rather than the others answering "safe".
func TestCheckMemoryPolicyClusterNodeDown(t *testing.T) {
	cl := testenv.StartCluster(t)
	listReplicas(t, cl)
	c := cl.Client(t)
	ctx := context.Background()
	if _, err := redisstore.CheckMemoryPolicy(ctx, c); err != nil { // the client learns the nodes
		t.Fatal(err)
	}
	down := cl.Replicas[1]
	down.Kill()
	mp, err := redisstore.CheckMemoryPolicy(ctx, c)
	if err == nil || !strings.HasPrefix(err.Error(), "redisstore: ") || !strings.Contains(err.Error(), down.Addr()) {
		t.Errorf("%s down: %+v, %v; want an error naming it", down.Addr(), mp, err)
	}
}
