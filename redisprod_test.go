package throttled

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// prodPassword is the password of the production-like Redis parts.
const prodPassword = "Redis-pw-7f3a9c"

// startInstance builds the Instance of testenv.ServeConfig with the
// THROTTLED_* variables env (the redis settings), logging to log, and runs
// its background parts until the test ends.
func startInstance(t *testing.T, log *testenv.SyncBuffer, env ...string) *Instance {
	t.Helper()
	cfg, err := config.Parse([]byte(testenv.ServeConfig("", "")), env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{}, len(s.runners))
	for _, run := range s.runners {
		go func() { _ = run(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		for range s.runners {
			<-done
		}
		_ = s.Close()
	})
	return s
}

// perSecond5 is a rule of 5 requests a second, burst 5.
var perSecond5 = limiter.Rule{Name: "prod", Limit: 5, Period: time.Second, Burst: 5}

// waitShared waits (up to 10 s) until s decides from Redis, on a key of
// its own, failing the test otherwise.
func waitShared(t *testing.T, s *Instance) {
	t.Helper()
	req := limiter.Request{Key: "warm-up", Rule: limiter.Rule{Name: "warm", Limit: 1e9, Period: time.Second}}
	testenv.WaitFor(t, 10*time.Second, "a shared decision", func() bool {
		d, err := s.store.Decide(context.Background(), req)
		return err == nil && !d.Fallback
	})
}

// assertShared makes 10 decisions on one key, alternating between the
// instances: a quota of 5 held in Redis admits exactly 5 of them, none
// from the fallback.
func assertShared(t *testing.T, instances ...*Instance) {
	t.Helper()
	admitted := 0
	for i := range 10 {
		d, err := instances[i%len(instances)].store.Decide(context.Background(),
			limiter.Request{Key: "shared-" + t.Name(), Rule: perSecond5})
		if err != nil || d.Fallback {
			t.Fatalf("decision %d: %+v, %v; want a shared one", i, d, err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 5 {
		t.Fatalf("admitted %d of 10 on a quota of 5 shared by %d instances, want 5", admitted, len(instances))
	}
}

// TestRedisTLSWithPassword: two instances on a TLS-only redis-server that
// requires a password (redis.password, redis.tls.* from THROTTLED_*, with
// a client certificate) share their decisions, counted in that Redis.
func TestRedisTLSWithPassword(t *testing.T) {
	files := testenv.WriteTLSFiles(t)
	r := testenv.StartTLSRedis(t, files, prodPassword)
	env := []string{"THROTTLED_REDIS_URL=redis://" + r.Addr() + "/0", "THROTTLED_REDIS_PASSWORD=" + prodPassword,
		"THROTTLED_REDIS_TLS_CA_FILE=" + files.CA, "THROTTLED_REDIS_TLS_CERT_FILE=" + files.ClientCert,
		"THROTTLED_REDIS_TLS_KEY_FILE=" + files.ClientKey, "THROTTLED_REDIS_TLS_SERVER_NAME=" + testenv.ServerName}
	var log testenv.SyncBuffer
	a, b := startInstance(t, &log, env...), startInstance(t, &log, env...)
	waitShared(t, a)
	waitShared(t, b)
	rc := r.Client()
	before := testenv.EvalshaCalls(t, rc)
	assertShared(t, a, b)
	if n := testenv.EvalshaCalls(t, rc) - before; n < 10 {
		t.Fatalf("the TLS redis ran %d scripts for 10 decisions, want at least 10", n)
	}
	noPassword(t, log.String())
}

// TestRedisStartupProblemsNamed: an instance whose Redis refuses it says
// why at start, naming the setting to fix: no password where one is
// required, a wrong password, a CA that did not sign the server's
// certificate. It decides from its fallback meanwhile and never logs the
// password.
func TestRedisStartupProblemsNamed(t *testing.T) {
	files := testenv.WriteTLSFiles(t)
	r := testenv.StartTLSRedis(t, files, prodPassword)
	url := "THROTTLED_REDIS_URL=redis://" + r.Addr() + "/0"
	ca := "THROTTLED_REDIS_TLS_CA_FILE=" + files.CA
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"no password", []string{url, ca}, "redis at " + r.Addr() +
			" requires a password: set redis.password (or redis.password_file, THROTTLED_REDIS_PASSWORD)"},
		{"wrong password", []string{url, ca, "THROTTLED_REDIS_PASSWORD=not-" + prodPassword},
			"redis at " + r.Addr() + " refused the credentials: check redis.username and redis.password"},
		{"wrong CA", []string{url, "THROTTLED_REDIS_PASSWORD=" + prodPassword,
			"THROTTLED_REDIS_TLS_CA_FILE=" + testenv.WriteTLSFiles(t).CA},
			"redis at " + r.Addr() + " failed TLS: check redis.tls (ca_file, server_name, cert_file, key_file)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log testenv.SyncBuffer
			s := startInstance(t, &log, tc.env...)
			if got := testenv.GrepLines(log.String(), tc.want); got == "" {
				t.Fatalf("no line %q in the log:\n%s", tc.want, log.String())
			}
			d, err := s.store.Decide(context.Background(), limiter.Request{Key: "k", Rule: perSecond5})
			if err != nil || !d.Fallback || !d.Allowed {
				t.Fatalf("decision %+v, %v; want allowed by the fallback", d, err)
			}
			noPassword(t, log.String())
		})
	}
}

// noPassword fails the test when the log holds the password.
func noPassword(t *testing.T, log string) {
	t.Helper()
	if strings.Contains(log, prodPassword) {
		t.Fatalf("the log holds the redis password:\n%s", testenv.GrepLines(log, prodPassword))
	}
}

// TestRedisClusterWithPassword: two instances on a 3-master Redis Cluster
// whose nodes require a password (redis.cluster_addrs, the password from
// redis.password_file)
// share their decisions, counted on the cluster's masters.
func TestRedisClusterWithPassword(t *testing.T) {
	cl := testenv.StartClusterAuth(t, prodPassword)
	secret := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(secret, []byte(prodPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"THROTTLED_REDIS_CLUSTER_ADDRS=" + strings.Join(cl.Addrs(), ","),
		"THROTTLED_REDIS_PASSWORD_FILE=" + secret}
	var log testenv.SyncBuffer
	a, b := startInstance(t, &log, env...), startInstance(t, &log, env...)
	waitShared(t, a)
	waitShared(t, b)
	calls := func() int {
		n := 0
		for _, m := range cl.Masters {
			c := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: prodPassword})
			n += testenv.EvalshaCalls(t, c)
			c.Close()
		}
		return n
	}
	before := calls()
	assertShared(t, a, b)
	if n := calls() - before; n < 10 {
		t.Fatalf("the cluster's masters ran %d scripts for 10 decisions, want at least 10", n)
	}
	noPassword(t, log.String())
}

// TestOpenRedisErrorHidesPassword: a redis.url that does not parse is
// named, without the password it carries (url.Parse quotes the whole URL).
func TestOpenRedisErrorHidesPassword(t *testing.T) {
	_, err := OpenRedis(&config.RedisConfig{URL: "redis://app:" + prodPassword + "@127.0.0.1:99999x/0"})
	if err == nil || !strings.HasPrefix(err.Error(), "redis.url: ") || strings.Contains(err.Error(), prodPassword) {
		t.Fatalf("error %v; want one naming redis.url without the password", err)
	}
}
