package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// AuthRedis is a redis-server started for one test that asks for a
// password (requirepass), and with StartTLSRedis answers only over TLS.
type AuthRedis struct {
	tb       testing.TB
	Port     int
	Proc     *Process
	Password string
	opt      redis.Options // how its own clients connect (Addr aside)
}

// Addr is host:port of the server.
func (r *AuthRedis) Addr() string { return Addr(r.Port) }

// Client returns a client that authenticates (over TLS for a TLS server),
// closed when the test ends.
func (r *AuthRedis) Client() *redis.Client {
	o := r.opt
	o.Addr = r.Addr()
	c := redis.NewClient(&o)
	r.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill sends SIGKILL to the server and waits for it to exit.
func (r *AuthRedis) Kill() { r.Proc.Kill() }

// StartTLSRedis starts a redis-server that answers only over TLS (no
// clear-text port) with the server certificate of files, verifies client
// certificates signed by files.CA when a client sends one (tls-auth-clients
// optional), and requires password. It stops when the test ends.
func StartTLSRedis(tb testing.TB, files TLSFiles, password string) *AuthRedis {
	tb.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(files.CA)
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		tb.Fatalf("testenv: CA %s: %v", files.CA, err)
	}
	r := &AuthRedis{tb: tb, Password: password, opt: redis.Options{Password: password,
		TLSConfig: &tls.Config{RootCAs: pool, ServerName: ServerName, MinVersion: tls.VersionTLS12}}}
	r.start(tb.TempDir(), func(port string) []string {
		return []string{"--port", "0", "--tls-port", port, "--tls-cert-file", files.ServerCert,
			"--tls-key-file", files.ServerKey, "--tls-ca-cert-file", files.CA, "--tls-auth-clients", "optional"}
	})
	return r
}

// startAuthRedis starts a clear-text redis-server on a free port that
// requires password, with args added (a replica's --replicaof).
func startAuthRedis(tb testing.TB, password string, args ...string) *AuthRedis {
	tb.Helper()
	r := &AuthRedis{tb: tb, Password: password, opt: redis.Options{Password: password}}
	r.start(tb.TempDir(), func(port string) []string { return append([]string{"--port", port}, args...) })
	return r
}

// start launches redis-server in dir with the listener args(port) on a
// free port, persistence off and requirepass (and masterauth) r.Password,
// waits until it answers its own clients and stops it when the test ends.
func (r *AuthRedis) start(dir string, listen func(port string) []string) {
	r.tb.Helper()
	bin := Binary(r.tb, "redis-server")
	r.Port = firstPort(r.tb)
	err := onFreePort(r.tb, &r.Port, func() (*Process, error) {
		args := append(listen(strconv.Itoa(r.Port)), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--repl-diskless-sync-delay", "0", "--requirepass", r.Password, "--masterauth", r.Password)
		var err error
		if r.Proc, err = startProc(dir, "redis.log", bin, args...); err != nil {
			return nil, err
		}
		return r.Proc, waitOwn(r.Proc, r.opt, r.Addr())
	})
	if r.Proc != nil {
		r.tb.Cleanup(func() {
			if !r.Proc.Exited() {
				_ = r.Proc.Signal(syscall.SIGCONT)
				r.Proc.Kill()
			}
		})
	}
	if err != nil {
		log := ""
		if r.Proc != nil {
			log = r.Proc.Log()
		}
		r.tb.Fatalf("testenv: redis-server on %s did not answer PING: %v\n%s", r.Addr(), err, log)
	}
}

// waitOwn waits (up to 10 s) until p answers PING on addr to a client with
// opt, as itself (INFO's process_id: another test's server may hold the
// port). A listener that is not Redis answers nothing: the client's short
// timeouts retry it; PING answers LOADING while it reads its AOF.
func waitOwn(p *Process, opt redis.Options, addr string) error {
	opt.Addr, opt.MaxRetries, opt.DialTimeout, opt.ReadTimeout = addr, -1, 200*time.Millisecond, 500*time.Millisecond
	c := redis.NewClient(&opt)
	defer c.Close()
	pid := "process_id:" + strconv.Itoa(p.Pid()) + "\r\n"
	return waitFor(10*time.Second, func() error {
		if p.Exited() {
			return errExited
		}
		info, err := c.Info(context.Background(), "server").Result()
		if err == nil && !strings.Contains(info, pid) {
			err = errNotOurs
		}
		if err != nil {
			return err
		}
		return c.Ping(context.Background()).Err()
	})
}
