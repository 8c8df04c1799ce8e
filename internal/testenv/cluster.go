package testenv

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var errExited = errors.New("process exited")

// Cluster is a 3-master Redis Cluster started for one test; AddReplica
// gives a master a replica.
type Cluster struct {
	Nodes []*Redis
}

// StartCluster starts three redis-server nodes with cluster mode on, joins
// them with `redis-cli --cluster create`, and waits until every slot is
// served.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	cl := &Cluster{}
	addrs := make([]string, 0, 3)
	for i := 0; i < 3; i++ {
		n := startClusterNode(tb)
		cl.Nodes = append(cl.Nodes, n)
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(Binary(tb, "redis-cli"), args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("testenv: redis-cli --cluster create: %v\n%s", err, out)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	err = waitFor(20*time.Second, func() error {
		info, err := c.ClusterInfo(context.Background()).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("cluster not ok yet: %.80s", info)
		}
		// Every node must know the whole layout before clients route.
		for _, a := range addrs {
			nc := redis.NewClient(&redis.Options{Addr: a})
			s, err := nc.ClusterInfo(context.Background()).Result()
			nc.Close()
			if err != nil || !strings.Contains(s, "cluster_slots_ok:16384") || !strings.Contains(s, "cluster_state:ok") {
				return fmt.Errorf("node %s not ready: %v", a, err)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("testenv: redis cluster on %v did not become ready: %v", addrs, err)
	}
	return cl
}

// Addrs lists host:port of every node.
func (cl *Cluster) Addrs() []string {
	a := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		a[i] = n.Addr()
	}
	return a
}

// Client returns a cluster client, closed when the test ends.
func (cl *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// startClusterNode starts one redis-server in cluster mode, not yet joined.
func startClusterNode(tb testing.TB) *Redis {
	tb.Helper()
	n := &Redis{tb: tb, dir: tb.TempDir(), Port: FreePort(tb)}
	n.Proc = start(tb, n.dir, "redis.log", "redis-server",
		"--port", strconv.Itoa(n.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", n.dir,
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "2000")
	tb.Cleanup(n.Stop)
	n.waitReady()
	return n
}

// NodeID is the cluster node id of node i.
func (cl *Cluster) NodeID(tb testing.TB, i int) string {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: cl.Nodes[i].Addr()})
	defer c.Close()
	id, err := c.Do(context.Background(), "CLUSTER", "MYID").Text()
	if err != nil {
		tb.Fatalf("testenv: CLUSTER MYID on %s: %v", cl.Nodes[i].Addr(), err)
	}
	return id
}

// AddReplica starts a node, joins it as a replica of master i and waits
// until its replication link is up. The master's slots then survive the
// master's death: the replica is promoted after the node timeout (2 s).
func (cl *Cluster) AddReplica(tb testing.TB, i int) *Redis {
	tb.Helper()
	n := startClusterNode(tb)
	out, err := exec.Command(Binary(tb, "redis-cli"), "--cluster", "add-node", n.Addr(), cl.Nodes[i].Addr(),
		"--cluster-slave", "--cluster-master-id", cl.NodeID(tb, i)).CombinedOutput()
	if err != nil {
		tb.Fatalf("testenv: redis-cli --cluster add-node: %v\n%s", err, out)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	err = waitFor(20*time.Second, func() error {
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica of %s not in sync yet", cl.Nodes[i].Addr())
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("testenv: replica %s: %v", n.Addr(), err)
	}
	return n
}
