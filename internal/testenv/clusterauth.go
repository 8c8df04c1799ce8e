package testenv

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// StartClusterAuth is StartCluster whose nodes then require password
// (requirepass, and masterauth for the replicas' links): once the cluster
// is ready every node is told CONFIG SET masterauth, then requirepass, so
// that joining it stays StartCluster's. Clients of the nodes need the
// password from then on (AuthClient).
func StartClusterAuth(tb testing.TB, password string) *Cluster {
	tb.Helper()
	cl := StartCluster(tb)
	ctx := context.Background()
	nodes := append(cl.Masters[:len(cl.Masters):len(cl.Masters)], cl.Replicas...)
	for _, setting := range []string{"masterauth", "requirepass"} {
		for _, n := range nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr()})
			err := c.ConfigSet(ctx, setting, password).Err()
			c.Close()
			if err != nil {
				tb.Fatalf("testenv: CONFIG SET %s on %s: %v", setting, n.Addr(), err)
			}
		}
	}
	return cl
}

// AuthClient returns a cluster client that authenticates with password,
// closed when the test ends.
func (cl *Cluster) AuthClient(tb testing.TB, password string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Password: password})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
