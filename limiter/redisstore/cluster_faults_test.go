package redisstore_test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// slotOwners maps each key's slot to the node id of the master serving it.
func slotOwners(t *testing.T, c *redis.ClusterClient, keys []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		slot := c.ClusterKeySlot(ctx, k).Val()
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start <= slot && slot <= r.End {
					for _, n := range sh.Nodes {
						if n.Role == "master" {
							out[k] = n.ID
						}
					}
				}
			}
		}
	}
	return out
}

// TestClusterReshardUnderLoad: while 1,000 slots move from one master to
// another (redis-cli --cluster reshard: MIGRATING/IMPORTING, MIGRATE of
// each key), decisions on keys in those slots see no error (no MOVED, ASK,
// CROSSSLOT or TRYAGAIN reaches the caller) and each limited key admits
// exactly its burst: its bucket moved with it.
func TestClusterReshardUnderLoad(t *testing.T) {
	cl := testenv.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	redisstore.KeepDialing(c)
	s := redisstore.New(c, limiter.WithPrefix("rs:"))
	ctx := context.Background()
	ids := []string{cl.NodeID(t, 0), cl.NodeID(t, 1)}
	// Keys of the stored form rs:tb:{k}: route by k's slot.
	var keys []string
	for i := range 400 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	before := slotOwners(t, c, keys)
	rule := limiter.Rule{Name: "r", Limit: 20, Period: time.Hour} // no refill during the test
	var errs atomic.Int64
	var firstErr atomic.Value
	admitted, asked := make([]atomic.Int64, len(keys)), make([]atomic.Int64, len(keys))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; ; i = (i + 4) % len(keys) {
				select {
				case <-stop:
					return
				default:
				}
				asked[i].Add(1)
				d, err := s.Decide(ctx, limiter.Request{Key: keys[i], Rule: rule})
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if d.Allowed {
					admitted[i].Add(1)
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	out, err := exec.Command(testenv.Binary(t, "redis-cli"), "--cluster", "reshard", cl.Nodes[0].Addr(),
		"--cluster-from", ids[0], "--cluster-to", ids[1], "--cluster-slots", "1000", "--cluster-yes").CombinedOutput()
	// Go on until every key was asked past its burst (bounded), so that
	// each must show exactly its burst whatever the machine's speed.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		short := false
		for i := range asked {
			short = short || asked[i].Load() <= 20
		}
		if !short {
			break
		}
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("reshard: %v\n%s", err, out)
	}
	after := slotOwners(t, c, keys)
	moved := 0
	for _, k := range keys {
		if before[k] != after[k] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no key's slot moved: the test proves nothing")
	}
	if errs.Load() > 0 {
		t.Errorf("%d decisions failed during the reshard, first: %v", errs.Load(), firstErr.Load())
	}
	for i, k := range keys {
		if n := admitted[i].Load(); n != 20 {
			t.Errorf("key %s (moved %v): %d admitted of %d asked, want exactly its burst of 20", k, before[k] != after[k], n, asked[i].Load())
		}
	}
	t.Logf("%d of %d keys moved during the reshard", moved, len(keys))
}

// redirectErr matches what a cluster client must never pass on: the
// redirections and refusals it should follow or route around.
var redirectErr = regexp.MustCompile(`MOVED|ASK|CROSSSLOT|READONLY|TRYAGAIN`)

// TestClusterFailoverUnderLoad: a master is SIGKILLed under load and its
// replica takes over. Decisions on its slots fail only while the cluster
// has no master for them (connection errors, CLUSTERDOWN: the fallback's
// business), never with a redirection or READONLY error, and work again
// within 5 s of the promotion.
func TestClusterFailoverUnderLoad(t *testing.T) {
	cl := testenv.StartCluster(t)
	rep := cl.AddReplica(t, 0)
	// As cmd/throttled configures it: without MOVED (the dead master's
	// slots just fail) go-redis reloads the slot map only this often.
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true,
		ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	redisstore.KeepDialing(c)
	s := redisstore.New(c, limiter.WithPrefix("fo:"))
	rule := limiter.Rule{Name: "r", Limit: 1e9, Period: time.Second}
	var mu sync.Mutex
	var lastErr time.Time
	var lastMsg string
	var redirects []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; ; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				_, err := s.Decide(ctx, limiter.Request{Key: fmt.Sprintf("k%d", i%400), Rule: rule})
				cancel()
				if err == nil {
					continue
				}
				mu.Lock()
				lastErr, lastMsg = time.Now(), err.Error()
				if redirectErr.MatchString(err.Error()) && len(redirects) < 5 {
					redirects = append(redirects, err.Error())
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	cl.Nodes[0].Kill()
	rc := redis.NewClient(&redis.Options{Addr: rep.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(rc.Info(context.Background(), "replication").Val(), "role:master") {
		if time.Now().After(deadline) {
			t.Fatal("the replica was not promoted within 20s of its master's death")
		}
		time.Sleep(20 * time.Millisecond)
	}
	promoted := time.Now()
	time.Sleep(6 * time.Second)
	close(stop)
	wg.Wait()
	if len(redirects) > 0 {
		t.Errorf("redirection errors reached the caller: %q", redirects)
	}
	if resumed := lastErr.Sub(promoted); resumed > 5*time.Second {
		t.Errorf("decisions still failed %v after the promotion (%s), want within 5s", resumed, lastMsg)
	} else {
		t.Logf("last failed decision %v after the promotion", resumed)
	}
}
