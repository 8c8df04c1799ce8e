package redisstore

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeepDialing makes client dial Redis on every connection it needs, through
// an outage of any length, so that decisions resume as soon as Redis answers
// again. It installs a dial hook on a *redis.Client, or on every node of a
// *redis.ClusterClient; other clients are left alone.
//
// Why: once PoolSize dials in a row have failed, go-redis stops dialing and
// fails every new connection with the last dial error, probing Redis only
// once a second in the background; after a long outage shared decisions
// then resume up to a second (plus a probe) after Redis is back. With this
// hook a failed dial is reported by the connection instead (its first read
// or write returns the dial error), so the pool never counts it, and the
// next connection is dialed for real. What keeps a dead Redis from being
// hammered is the circuit breaker in front of decisions (fallback.Guard).
func KeepDialing(client redis.UniversalClient) {
	switch c := client.(type) {
	case *redis.Client:
		c.AddHook(keepDialing{})
	case *redis.ClusterClient:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(keepDialing{}) })
	}
}

type keepDialing struct{}

func (keepDialing) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return &failedConn{err: err, addr: dialAddr{network, addr}}, nil
		}
		return c, nil
	}
}

func (keepDialing) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (keepDialing) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// failedConn is a connection whose dial failed: every read and write
// returns the dial error, so go-redis drops it at its first use.
type failedConn struct {
	err  error
	addr dialAddr
}

func (c *failedConn) Read([]byte) (int, error)         { return 0, c.err }
func (c *failedConn) Write([]byte) (int, error)        { return 0, c.err }
func (c *failedConn) Close() error                     { return nil }
func (c *failedConn) LocalAddr() net.Addr              { return c.addr }
func (c *failedConn) RemoteAddr() net.Addr             { return c.addr }
func (c *failedConn) SetDeadline(time.Time) error      { return nil }
func (c *failedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *failedConn) SetWriteDeadline(time.Time) error { return nil }

// dialAddr is the address a failedConn was dialing.
type dialAddr struct{ network, addr string }

func (a dialAddr) Network() string { return a.network }
func (a dialAddr) String() string  { return a.addr }
