package testenv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var errExited = errors.New("process exited")

// Cluster is a Redis Cluster started for one test: three masters that
// share the 16,384 slots, each with one replica that takes over its slots
// when the master dies (after the node timeout, 2 s, and an election).
type Cluster struct {
	Masters  []*Redis // in slot order: Masters[0] serves slot 0
	Replicas []*Redis // Replicas[i] replicates Masters[i]
}

// StartCluster starts six redis-server nodes with cluster mode on (in
// parallel), joins them as `redis-cli --cluster create --cluster-replicas 1`
// does but without its one-second pauses (see join), and waits until every
// node serves the whole slot map (cluster_state:ok) and every replica is in
// sync with its master. Everything stops when the test ends.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bin := Binary(tb, "redis-server")
	var nodes [6]*Redis
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		nodes[i] = &Redis{tb: tb, dir: tb.TempDir(), Port: firstPort(tb)}
		wg.Go(func() { errs[i] = nodes[i].startClusterNode(bin) })
	}
	wg.Wait()
	for i, n := range nodes { // a port another process took meanwhile: another one
		errs[i] = retryTaken(tb, &n.Port, n.Proc, errs[i], func() (*Process, error) {
			err := n.startClusterNode(bin)
			return n.Proc, err
		})
	}
	for _, n := range nodes {
		if n.Proc != nil {
			tb.Cleanup(n.Stop)
		}
	}
	for i, n := range nodes {
		if errs[i] != nil {
			log := ""
			if n.Proc != nil {
				log = n.Proc.Log()
			}
			tb.Fatalf("testenv: cluster node redis-server on %s: %v\n%s", n.Addr(), errs[i], log)
		}
	}
	cl := &Cluster{Masters: nodes[:3:3], Replicas: nodes[3:]}
	if err := cl.join(); err != nil {
		tb.Fatalf("testenv: joining the redis cluster on %v: %v", cl.Addrs(), err)
	}
	if err := waitFor(20*time.Second, cl.ready); err != nil {
		tb.Fatalf("testenv: redis cluster on %v did not become ready: %v", cl.Addrs(), err)
	}
	return cl
}

// join makes the six nodes one cluster with the steps of redis-cli --cluster
// create: each master takes a third of the slots and its own config epoch,
// every node meets the first master, and once a replica knows its master
// (gossip, about 100 ms) it replicates it.
func (cl *Cluster) join() error {
	ctx := context.Background()
	ids := make([]string, len(cl.Masters))
	for i, m := range cl.Masters {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		err := c.ClusterAddSlotsRange(ctx, i*16384/3, (i+1)*16384/3-1).Err()
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		if err == nil {
			ids[i], err = c.Do(ctx, "CLUSTER", "MYID").Text()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("master %s: %w", m.Addr(), err)
		}
	}
	for _, n := range append(cl.Masters[1:3:3], cl.Replicas...) {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		err := c.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(cl.Masters[0].Port)).Err()
		c.Close()
		if err != nil {
			return fmt.Errorf("%s meets %s: %w", n.Addr(), cl.Masters[0].Addr(), err)
		}
	}
	for i, r := range cl.Replicas {
		c := redis.NewClient(&redis.Options{Addr: r.Addr()})
		err := waitFor(10*time.Second, func() error { return c.Do(ctx, "CLUSTER", "REPLICATE", ids[i]).Err() })
		c.Close()
		if err != nil {
			return fmt.Errorf("%s replicates %s: %w", r.Addr(), cl.Masters[i].Addr(), err)
		}
	}
	return nil
}

// ready reports what is not ready yet: a node that does not know the whole
// cluster or serve every slot, or a replica whose link to its master is down.
func (cl *Cluster) ready() error {
	ctx := context.Background()
	for _, n := range append(cl.Masters[:len(cl.Masters):len(cl.Masters)], cl.Replicas...) {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		s, err := c.ClusterInfo(ctx).Result()
		c.Close()
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Addr(), err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:16384", "cluster_known_nodes:6"} {
			if !strings.Contains(s, want) {
				return fmt.Errorf("node %s: not %s yet", n.Addr(), want)
			}
		}
	}
	for i, r := range cl.Replicas {
		c := redis.NewClient(&redis.Options{Addr: r.Addr()})
		s, err := c.Info(ctx, "replication").Result()
		c.Close()
		if err != nil || !strings.Contains(s, "master_link_status:up") ||
			!strings.Contains(s, "master_port:"+strconv.Itoa(cl.Masters[i].Port)) {
			return fmt.Errorf("replica %s of %s not in sync yet: %v", r.Addr(), cl.Masters[i].Addr(), err)
		}
	}
	return nil
}

// Addrs lists host:port of every node, masters first: the seeds of a
// cluster client, so that it finds the cluster whichever node is down.
func (cl *Cluster) Addrs() []string {
	a := make([]string, 0, len(cl.Masters)+len(cl.Replicas))
	for _, n := range append(cl.Masters[:len(cl.Masters):len(cl.Masters)], cl.Replicas...) {
		a = append(a, n.Addr())
	}
	return a
}

// Client returns a cluster client, closed when the test ends.
func (cl *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// startClusterNode starts n as a redis-server (at bin) in cluster mode, not
// yet joined, and waits until it answers, as itself (wait). A replica's first sync
// starts at once (no diskless sync delay). It may run outside the test's
// goroutine.
func (n *Redis) startClusterNode(bin string) error {
	var err error
	n.Proc, err = startProc(n.dir, "redis.log", bin, "--port", strconv.Itoa(n.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", n.dir,
		"--repl-diskless-sync-delay", "0",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "2000")
	if err != nil {
		return err
	}
	return n.wait()
}

// NodeID is the cluster node id of master i.
func (cl *Cluster) NodeID(tb testing.TB, i int) string {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: cl.Masters[i].Addr()})
	defer c.Close()
	id, err := c.Do(context.Background(), "CLUSTER", "MYID").Text()
	if err != nil {
		tb.Fatalf("testenv: CLUSTER MYID on %s: %v", cl.Masters[i].Addr(), err)
	}
	return id
}

// WaitPromoted waits (up to 20 s) until replica i reports itself master,
// as after its master's death, failing the test otherwise, and returns
// when it saw the promotion.
func (cl *Cluster) WaitPromoted(tb testing.TB, i int) time.Time {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: cl.Replicas[i].Addr()})
	defer c.Close()
	err := waitFor(20*time.Second, func() error {
		role, err := c.Do(context.Background(), "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("replica %s not promoted: role %v, %v", cl.Replicas[i].Addr(), role, err)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return time.Now()
}
