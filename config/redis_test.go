package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

const redisTiers = `
tiers:
  free: { rate: 5, period: 1s, burst: 5, priority: 1 }
`

// checkRedis is the report of a configuration whose redis section is
// redis (indented two spaces) with the environment environ.
func checkRedis(t *testing.T, redis string, environ ...string) (*Config, string) {
	t.Helper()
	c, r := Check([]byte("redis:\n"+redis+redisTiers), environ, nil)
	if c == nil {
		t.Fatalf("not parsed: %v", r)
	}
	var errs []string
	for _, f := range r {
		if !f.warn {
			errs = append(errs, f.String())
		}
	}
	return c, strings.Join(errs, "\n")
}

func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRedisPasswordSources: redis.password, redis.password_file (read at
// load, its newline dropped) and THROTTLED_REDIS_PASSWORD, which wins over
// both; the password and the file in the file at once are an error naming
// both, and so is an unreadable file.
func TestRedisPasswordSources(t *testing.T) {
	file := writeSecret(t, "from-file\n")
	for _, tc := range []struct {
		name, redis string
		env         []string
		want        string
	}{
		{"password", "  url: redis://127.0.0.1:6379\n  password: in-yaml\n", nil, "in-yaml"},
		{"file", "  url: redis://127.0.0.1:6379\n  password_file: " + file + "\n", nil, "from-file"},
		{"env over file", "  url: redis://127.0.0.1:6379\n  password_file: " + file + "\n",
			[]string{"THROTTLED_REDIS_PASSWORD=from-env"}, "from-env"},
		{"env over password", "  url: redis://127.0.0.1:6379\n  password: in-yaml\n",
			[]string{"THROTTLED_REDIS_PASSWORD=from-env"}, "from-env"},
		{"file from env over password", "  url: redis://127.0.0.1:6379\n  password: in-yaml\n",
			[]string{"THROTTLED_REDIS_PASSWORD_FILE=" + file}, "from-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, errs := checkRedis(t, tc.redis, tc.env...)
			if errs != "" {
				t.Fatal(errs)
			}
			if c.Redis.Password != tc.want || c.Redis.PasswordFile != "" {
				t.Fatalf("password %q (file %q), want %q", c.Redis.Password, c.Redis.PasswordFile, tc.want)
			}
		})
	}
}

// TestRedisFindings: config check names each wrong redis setting, its
// line and what to do: a missing or non-PEM TLS file, a certificate
// without its key, a username without a password, a password in two
// places, an unreadable password file, two kinds of Redis, a sentinel
// without its master name.
func TestRedisFindings(t *testing.T) {
	files := testenv.WriteTLSFiles(t)
	notPEM := writeSecret(t, "not a certificate")
	missing := filepath.Join(t.TempDir(), "nope.pem")
	for _, tc := range []struct{ name, redis, want string }{
		{"ca missing", "  url: rediss://127.0.0.1:6379\n  tls:\n    ca_file: " + missing,
			"line 4: redis.tls.ca_file: open " + missing + ": no such file or directory"},
		{"ca not PEM", "  url: rediss://127.0.0.1:6379\n  tls:\n    ca_file: " + notPEM,
			"line 4: redis.tls.ca_file: " + notPEM + " holds no PEM certificate"},
		{"cert without key", "  url: rediss://127.0.0.1:6379\n  tls:\n    cert_file: " + files.ClientCert,
			"line 3: redis.tls.key_file: required with redis.tls.cert_file"},
		{"key not matching", "  url: rediss://127.0.0.1:6379\n  tls:\n    cert_file: " + files.ClientCert +
			"\n    key_file: " + files.ServerKey,
			"line 4: redis.tls.cert_file: with redis.tls.key_file: tls: private key does not match public key"},
		{"username without password", "  url: redis://127.0.0.1:6379\n  username: app",
			`line 1: redis.password: missing: redis.username "app" needs a password ` +
				"(redis.password, redis.password_file or THROTTLED_REDIS_PASSWORD)"},
		{"password twice", "  url: redis://127.0.0.1:6379\n  password: a\n  password_file: " + notPEM,
			"line 4: redis.password_file: set redis.password or redis.password_file, not both"},
		{"password file missing", "  url: redis://127.0.0.1:6379\n  password_file: " + missing,
			"line 3: redis.password_file: open " + missing + ": no such file or directory"},
		{"password in url too", "  url: redis://:a@127.0.0.1:6379\n  password: b",
			"line 3: redis.password: redis.url carries a password too: set it in one place"},
		{"url and sentinel", "  url: redis://127.0.0.1:6379\n  sentinel: { master: m, addrs: ['127.0.0.1:26379'] }",
			"line 1: redis: set one of redis.url, redis.cluster_addrs and redis.sentinel, not several"},
		{"sentinel without master", "  sentinel: { addrs: ['127.0.0.1:26379'] }",
			"line 2: redis.sentinel.master: required with redis.sentinel: the name the sentinels monitor"},
		{"sentinel addr", "  sentinel: { master: m, addrs: [sentinel-0] }",
			"line 2: redis.sentinel.addrs[0]: want host:port: address sentinel-0: missing port in address"},
		{"password without redis", "  password: a",
			"line 1: redis: credentials or TLS without a Redis: set redis.url, redis.cluster_addrs or redis.sentinel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, errs := checkRedis(t, tc.redis); errs != tc.want {
				t.Fatalf("report:\n%s\nwant:\n%s", errs, tc.want)
			}
		})
	}
}

// TestRedisPasswordNeverReported: no finding repeats a password, not even
// the errors about a URL that carries one.
func TestRedisPasswordNeverReported(t *testing.T) {
	const pw = "s3cret-Redis-pw"
	for _, redis := range []string{
		"  url: redis://app:" + pw + "@127.0.0.1:99999x/0\n  password: " + pw,
		"  url: redis://app:" + pw + "@ho st/0",
		"  password: " + pw + "\n  username: app\n  sentinel: { master: m, password: " + pw + " }",
	} {
		_, r := Check([]byte("redis:\n"+redis+redisTiers), []string{"THROTTLED_REDIS_PASSWORD=" + pw}, nil)
		if r.Errors() == 0 {
			t.Fatalf("%s: no error", redis)
		}
		if strings.Contains(r.Error(), pw) {
			t.Fatalf("the report holds the password:\n%s", r.Error())
		}
	}
}

// TestRedisTLSConfig: redis.tls builds the client's TLS: the CA as its
// only root, the client certificate, the server name.
func TestRedisTLSConfig(t *testing.T) {
	files := testenv.WriteTLSFiles(t)
	c := RedisConfig{TLS: RedisTLS{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey,
		ServerName: testenv.ServerName}}
	tc, err := c.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	if tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != testenv.ServerName {
		t.Fatalf("tls config: roots %v, %d certificates, server name %q", tc.RootCAs, len(tc.Certificates), tc.ServerName)
	}
	if tc, err := (&RedisConfig{}).ClientTLS(); tc != nil || err != nil {
		t.Fatalf("no redis.tls: %v, %v; want no TLS", tc, err)
	}
}
