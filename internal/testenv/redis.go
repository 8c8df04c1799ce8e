package testenv

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server started for one test.
type Redis struct {
	tb   testing.TB
	dir  string
	Port int
	Proc *Process
	aof  bool
}

// StartRedis starts a redis-server on a free loopback port with persistence
// off, waits until it answers PING and stops it when the test ends.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	r := &Redis{tb: tb, dir: tb.TempDir()}
	r.startFresh()
	tb.Cleanup(r.Stop)
	return r
}

// StartRedisAOF is StartRedis with the append-only file on (fsync every
// second, as docker-compose.yml runs it): a restart after Kill reloads
// every write Redis acknowledged.
func StartRedisAOF(tb testing.TB) *Redis {
	tb.Helper()
	r := &Redis{tb: tb, dir: tb.TempDir(), aof: true}
	r.startFresh()
	tb.Cleanup(r.Stop)
	return r
}

// firstPort is the port a fresh server tries first (FreePort; tests of
// this package set a taken one).
var firstPort = FreePort

// startFresh starts r on a free port (onFreePort).
func (r *Redis) startFresh() {
	r.tb.Helper()
	r.Port = firstPort(r.tb)
	err := onFreePort(r.tb, &r.Port, func() (*Process, error) {
		r.Proc = r.launch()
		return r.Proc, r.wait()
	})
	if err != nil {
		r.tb.Fatalf("testenv: redis-server on %s did not answer PING: %v\n%s", r.Addr(), err, r.Proc.Log())
	}
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return Addr(r.Port) }

// URL is a redis:// URL of the server.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Start (re)starts the server on its port, as after Kill.
func (r *Redis) Start() {
	r.tb.Helper()
	r.Proc = r.launch()
	if err := r.wait(); err != nil {
		r.tb.Fatalf("testenv: redis-server on %s did not answer PING: %v\n%s", r.Addr(), err, r.Proc.Log())
	}
}

// launch starts the redis-server process of r on r.Port.
func (r *Redis) launch() *Process {
	r.tb.Helper()
	aof := map[bool]string{false: "no", true: "yes"}[r.aof]
	return start(r.tb, r.dir, "redis.log", "redis-server",
		"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", aof, "--appendfsync", "everysec", "--dir", r.dir)
}

// wait waits (up to 10 s) until r's own process answers on r.Port: a
// server of another test that holds the port answers with another
// process_id.
func (r *Redis) wait() error { return waitOwn(r.Proc, redis.Options{}, r.Addr()) }

var errNotOurs = errors.New("another redis-server answers on the port")

// Client returns a new client for the server, closed when the test ends.
func (r *Redis) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	r.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// DeadlineClient returns a client that honours context deadlines, as
// production needs: without ContextTimeoutEnabled a stalled Redis holds
// each call for ReadTimeout whatever the deadline. retries < 0 disables
// retries. It is closed when the test ends.
func (r *Redis) DeadlineClient(retries int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), ContextTimeoutEnabled: true, MaxRetries: retries})
	r.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// DeadRedis returns a client of a redis-server that was started and killed:
// every call fails with "connection refused".
func DeadRedis(tb testing.TB) *redis.Client {
	r := StartRedis(tb)
	c := r.DeadlineClient(-1)
	r.Kill()
	return c
}

// Kill sends SIGKILL to the server and waits for it to exit.
func (r *Redis) Kill() { r.Proc.Kill() }

// Pause stops the server process (SIGSTOP): it keeps accepting connections
// in the kernel but answers nothing until Resume.
func (r *Redis) Pause() {
	if err := r.Proc.Pause(); err != nil {
		r.tb.Fatalf("testenv: pause redis-server: %v", err)
	}
}

// Resume continues a paused server (SIGCONT).
func (r *Redis) Resume() { _ = r.Proc.Signal(syscall.SIGCONT) }

// Stop ends the server if it still runs.
func (r *Redis) Stop() {
	if r.Proc != nil && !r.Proc.Exited() {
		r.Resume()
		r.Proc.Kill()
	}
}

// Info is the fields of an INFO section of c's server (go-redis InfoMap).
func Info(tb testing.TB, c *redis.Client, section string) map[string]string {
	tb.Helper()
	m, err := c.InfoMap(context.Background(), section).Result()
	if err != nil {
		tb.Fatalf("testenv: INFO %s: %v", section, err)
	}
	for _, fields := range m {
		return fields // the one section asked for
	}
	return map[string]string{}
}

// InfoInt is an integer field of an INFO section; it fails tb when the
// field is missing or not an integer.
func InfoInt(tb testing.TB, c *redis.Client, section, field string) int64 {
	tb.Helper()
	v, ok := Info(tb, c, section)[field]
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		tb.Fatalf("testenv: INFO %s: %s is %q (%v)", section, field, v, err)
	}
	return n
}

// CommandCalls is INFO commandstats' count of cmd (say "evalsha") on c
// since the last CONFIG RESETSTAT (0 before the first).
func CommandCalls(tb testing.TB, c *redis.Client, cmd string) int {
	tb.Helper()
	v, ok := Info(tb, c, "commandstats")["cmdstat_"+cmd] // calls=N,usec=…
	if !ok {
		return 0
	}
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, err := strconv.Atoi(calls)
	if err != nil {
		tb.Fatalf("testenv: INFO commandstats: cmdstat_%s is %q", cmd, v)
	}
	return n
}

// EvalshaCalls is CommandCalls of EVALSHA.
func EvalshaCalls(tb testing.TB, c *redis.Client) int { return CommandCalls(tb, c, "evalsha") }

// CPUSeconds is the CPU c's server has used: INFO cpu's used_cpu_sys +
// used_cpu_user, in seconds; it fails tb when either is missing.
func CPUSeconds(tb testing.TB, c *redis.Client) float64 {
	tb.Helper()
	info := Info(tb, c, "cpu")
	sys, err1 := strconv.ParseFloat(info["used_cpu_sys"], 64)
	user, err2 := strconv.ParseFloat(info["used_cpu_user"], 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("testenv: INFO cpu: %v %v", err1, err2)
	}
	return sys + user
}
