package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fleetRedis is the Redis of a fleet run: the caller's (--redis-url), or a
// redis-server of the bench's own on a free loopback port, or with
// --redis-cluster three of them as a 3-master Redis Cluster (no replicas:
// the run measures coordination, not failover).
type fleetRedis struct {
	url   string   // a single server's redis:// URL; "" for a cluster
	addrs []string // a cluster's masters
	procs []*exec.Cmd
	dir   string
}

// errRedisStart reports a redis-server the bench could not start.
var errRedisStart = errors.New("bench fleet: starting redis-server")

func startFleetRedis(url string, cluster bool) (*fleetRedis, error) {
	if url != "" {
		if cluster {
			return nil, fmt.Errorf("bench fleet: --redis-cluster starts a cluster of its own: drop --redis-url")
		}
		return &fleetRedis{url: url}, nil
	}
	dir, err := os.MkdirTemp("", "throttled-fleet-redis-")
	if err != nil {
		return nil, err
	}
	r := &fleetRedis{dir: dir}
	n := map[bool]int{false: 1, true: 3}[cluster]
	for i := range n {
		addr, err := r.startServer(strconv.Itoa(i), cluster)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.addrs = append(r.addrs, addr)
	}
	if !cluster {
		r.url, r.addrs = "redis://"+r.addrs[0]+"/0", nil
		return r, nil
	}
	if err := joinCluster(r.addrs); err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: cluster: %w", errRedisStart, err)
	}
	return r, nil
}

// startServer starts one redis-server (persistence off) in its own
// directory under r.dir and waits until it answers PING.
func (r *fleetRedis) startServer(name string, cluster bool) (string, error) {
	dir := r.dir + "/" + name
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var last error
	for range 3 { // a free port another process took meanwhile: another one
		port, err := freePort()
		if err != nil {
			return "", err
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
		if cluster {
			args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		}
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("%w: %w (is redis-server installed?)", errRedisStart, err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if last = waitPing(addr, cmd); last == nil {
			r.procs = append(r.procs, cmd)
			return addr, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	return "", fmt.Errorf("%w: %w", errRedisStart, last)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitPing waits up to 10 s for addr to answer PING, as long as cmd runs.
func waitPing(addr string, cmd *exec.Cmd) error {
	exited := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited", addr)
		default:
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// joinCluster gives each master a third of the slots and its own config
// epoch, makes them meet, and waits until each serves the whole slot map.
func joinCluster(addrs []string) error {
	ctx := context.Background()
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		err := c.ClusterAddSlotsRange(ctx, i*16384/len(addrs), (i+1)*16384/len(addrs)-1).Err()
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		if err == nil && i > 0 {
			host, port, _ := strings.Cut(addrs[0], ":")
			err = c.ClusterMeet(ctx, host, port).Err()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			s, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(s, "cluster_state:ok") && strings.Contains(s, "cluster_known_nodes:"+strconv.Itoa(len(addrs))) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return fmt.Errorf("%s: not ready: %v %q", a, err, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return nil
}

// client is a new client of the Redis whose connections go through dial.
func (r *fleetRedis) client(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (redis.UniversalClient, error) {
	if r.url == "" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.addrs, Dialer: dial, ContextTimeoutEnabled: true,
			ReadTimeout: time.Second, WriteTimeout: time.Second, ClusterStateReloadInterval: time.Second}), nil
	}
	opt, err := redis.ParseURL(r.url)
	if err != nil {
		return nil, fmt.Errorf("bench fleet: --redis-url: %w", err)
	}
	opt.Dialer, opt.ContextTimeoutEnabled = dial, true
	opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second
	return redis.NewClient(opt), nil
}

// eachServer calls f with a client of every server (every master).
func (r *fleetRedis) eachServer(ctx context.Context, f func(*redis.Client) error) error {
	var urls []string
	if r.url != "" {
		urls = []string{r.url}
	}
	for _, a := range r.addrs {
		urls = append(urls, "redis://"+a)
	}
	for _, u := range urls {
		opt, err := redis.ParseURL(u)
		if err != nil {
			return err
		}
		c := redis.NewClient(opt)
		err = f(c)
		c.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Close stops the servers the bench started.
func (r *fleetRedis) Close() {
	var wg sync.WaitGroup
	for _, p := range r.procs {
		wg.Go(func() { _ = p.Process.Kill(); _ = p.Wait() })
	}
	wg.Wait()
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}

// killSwitch is the dialer of one instance's Redis client: kill closes
// every connection it made and refuses new ones, as the instance's
// process dying would (its lease stays until it expires).
type killSwitch struct {
	mu    sync.Mutex
	dead  bool
	conns map[net.Conn]struct{}
}

var errKilled = errors.New("bench fleet: instance killed")

func (k *killSwitch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return nil, errKilled
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if k.conns == nil {
		k.conns = map[net.Conn]struct{}{}
	}
	tc := &trackedConn{Conn: c, k: k}
	k.conns[tc] = struct{}{}
	return tc, nil
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for c := range k.conns {
		_ = c.(*trackedConn).Conn.Close()
	}
	k.conns = nil
}

type trackedConn struct {
	net.Conn
	k *killSwitch
}

func (c *trackedConn) Close() error {
	c.k.mu.Lock()
	delete(c.k.conns, c)
	c.k.mu.Unlock()
	return c.Conn.Close()
}
