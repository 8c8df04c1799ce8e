package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name StartSentinel's sentinel monitors.
const SentinelMaster = "throttled-test"

// Sentinel is a Redis master, its replica and one Redis Sentinel (quorum
// 1) that promotes the replica about a second after the master stops
// answering (down-after-milliseconds 1000). Master and replica require
// Password; the sentinel requires SentinelPassword.
type Sentinel struct {
	tb               testing.TB
	Master, Replica  *AuthRedis
	Port             int // the sentinel's
	Proc             *Process
	Password         string
	SentinelPassword string
}

// StartSentinel starts the master, the replica (waiting until it is in
// sync) and the sentinel (`redis-server sentinel.conf --sentinel`, waiting
// until it knows the replica). Everything stops when the test ends.
func StartSentinel(tb testing.TB, password, sentinelPassword string) *Sentinel {
	tb.Helper()
	s := &Sentinel{tb: tb, Password: password, SentinelPassword: sentinelPassword}
	s.Master = startAuthRedis(tb, password)
	s.Replica = startAuthRedis(tb, password, "--replicaof", "127.0.0.1", strconv.Itoa(s.Master.Port))
	rc := s.Replica.Client()
	err := waitFor(20*time.Second, func() error {
		info, err := rc.Info(context.Background(), "replication").Result()
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = fmt.Errorf("replica %s not in sync with %s yet", s.Replica.Addr(), s.Master.Addr())
		}
		return err
	})
	if err != nil {
		tb.Fatalf("testenv: %v\n%s", err, s.Replica.Proc.Log())
	}
	s.startSentinel()
	return s
}

// startSentinel starts the sentinel process on a free port and waits until
// it reports the replica.
func (s *Sentinel) startSentinel() {
	s.tb.Helper()
	bin, dir := Binary(s.tb, "redis-server"), s.tb.TempDir()
	s.Port = firstPort(s.tb)
	err := onFreePort(s.tb, &s.Port, func() (*Process, error) {
		conf := filepath.Join(dir, "sentinel.conf") // sentinel rewrites it: a file of its own
		if err := os.WriteFile(conf, []byte(s.conf()), 0o600); err != nil {
			return nil, err
		}
		var err error
		if s.Proc, err = startProc(dir, "sentinel.log", bin, conf, "--sentinel"); err != nil {
			return nil, err
		}
		if err := waitOwn(s.Proc, redis.Options{Password: s.SentinelPassword}, s.Addr()); err != nil {
			return s.Proc, err
		}
		return s.Proc, waitFor(20*time.Second, s.knowsReplica)
	})
	if s.Proc != nil {
		s.tb.Cleanup(func() { s.Proc.Kill() })
	}
	if err != nil {
		log := ""
		if s.Proc != nil {
			log = s.Proc.Log()
		}
		s.tb.Fatalf("testenv: redis sentinel on %s: %v\n%s", s.Addr(), err, log)
	}
}

func (s *Sentinel) conf() string {
	return fmt.Sprintf(`port %d
bind 127.0.0.1
sentinel monitor %[2]s 127.0.0.1 %[3]d 1
sentinel down-after-milliseconds %[2]s 1000
sentinel failover-timeout %[2]s 5000
sentinel auth-pass %[2]s %[4]s
requirepass %[5]s
`, s.Port, SentinelMaster, s.Master.Port, s.Password, s.SentinelPassword)
}

// knowsReplica reports an error until the sentinel lists the replica.
func (s *Sentinel) knowsReplica() error {
	c := s.Client()
	defer c.Close()
	reps, err := c.Replicas(context.Background(), SentinelMaster).Result()
	if err != nil {
		return err
	}
	for _, r := range reps {
		if r["port"] == strconv.Itoa(s.Replica.Port) && !strings.Contains(r["flags"], "down") {
			return nil
		}
	}
	return fmt.Errorf("sentinel does not list replica %s yet: %v", s.Replica.Addr(), reps)
}

// Addr is host:port of the sentinel.
func (s *Sentinel) Addr() string { return Addr(s.Port) }

// Client is a new client of the sentinel; the caller closes it.
func (s *Sentinel) Client() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), Password: s.SentinelPassword, MaxRetries: -1})
}

// MasterAddr is the master's host:port as the sentinel reports it.
func (s *Sentinel) MasterAddr(tb testing.TB) string {
	tb.Helper()
	a, err := s.masterAddr()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return a
}

func (s *Sentinel) masterAddr() (string, error) {
	c := s.Client()
	defer c.Close()
	a, err := c.GetMasterAddrByName(context.Background(), SentinelMaster).Result()
	if err != nil || len(a) != 2 {
		return "", fmt.Errorf("SENTINEL get-master-addr-by-name %s: %v %v", SentinelMaster, a, err)
	}
	return a[0] + ":" + a[1], nil
}

// WaitPromoted waits (up to 30 s) until the sentinel names the replica as
// the master and the replica says it is one, failing the test otherwise,
// and returns when it saw the promotion.
func (s *Sentinel) WaitPromoted(tb testing.TB) time.Time {
	tb.Helper()
	rc := s.Replica.Client()
	err := waitFor(30*time.Second, func() error {
		if a, err := s.masterAddr(); err != nil || a != s.Replica.Addr() {
			return fmt.Errorf("sentinel names %q the master (%v), not the replica", a, err)
		}
		role, err := rc.Do(context.Background(), "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("replica %s not promoted: role %v, %v", s.Replica.Addr(), role, err)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("testenv: %v\n%s", err, s.Proc.Log())
	}
	return time.Now()
}
