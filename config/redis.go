package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/policy"
)

// RedisConfig selects the shared store: one Redis (url), a Redis Cluster
// (cluster_addrs) or the master that Redis Sentinel names (sentinel), one
// of them; none means the embedded in-memory store.
type RedisConfig struct {
	URL          string         `yaml:"url"`
	ClusterAddrs []string       `yaml:"cluster_addrs"`
	Sentinel     SentinelConfig `yaml:"sentinel"`
	// Username and Password authenticate every connection to Redis (AUTH:
	// an ACL user, or the default user without Username), whichever of
	// url, cluster_addrs and sentinel is set; a URL may carry them instead.
	// The password may come from PasswordFile (read at load, one trailing
	// newline dropped) or THROTTLED_REDIS_PASSWORD; the environment wins
	// over the file, and the file and redis.password in the same place
	// are an error. It is never logged.
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	// TLS, when any field is set (or the URL is rediss://), encrypts every
	// connection to Redis and verifies the server.
	TLS     RedisTLS        `yaml:"tls"`
	Prefix  string          `yaml:"prefix"`
	Timeout policy.Duration `yaml:"timeout"`
}

// SentinelConfig finds the Redis master through Redis Sentinel (go-redis's
// failover client): Master is the name the sentinels monitor, Addrs their
// host:port, Password the sentinels' own (requirepass), if any.
type SentinelConfig struct {
	Master   string   `yaml:"master"`
	Addrs    []string `yaml:"addrs"`
	Password string   `yaml:"password"`
}

// RedisTLS is the client side of TLS to Redis: the CA that signed the
// servers' certificates (PEM; empty: the system's roots), a client
// certificate and key (PEM) for servers that ask for one, and the name to
// verify (empty: the host dialled).
type RedisTLS struct {
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
}

// Configured reports whether a Redis is configured (url, cluster_addrs or
// sentinel), else the store is the embedded one.
func (c *RedisConfig) Configured() bool {
	return c.URL != "" || len(c.ClusterAddrs) > 0 || c.Sentinel.Master != "" || len(c.Sentinel.Addrs) > 0
}

// Where names the configured Redis for messages, without credentials.
func (c *RedisConfig) Where() string {
	switch {
	case len(c.ClusterAddrs) > 0:
		return "redis cluster at " + strings.Join(c.ClusterAddrs, ",")
	case c.Sentinel.Master != "":
		return "redis master " + c.Sentinel.Master + " of the sentinels at " + strings.Join(c.Sentinel.Addrs, ",")
	}
	if u, err := url.Parse(c.URL); err == nil {
		return "redis at " + u.Host
	}
	return "redis at (unparsable redis.url)"
}

// RedactedURL is the Redis URL with its password hidden, for logs.
func (c *RedisConfig) RedactedURL() string { return Redact(c.URL) }

// ReadPassword is the password to authenticate with: Password, else the
// contents of PasswordFile (one trailing newline dropped), else "".
func (c *RedisConfig) ReadPassword() (string, error) {
	if c.Password != "" || c.PasswordFile == "" {
		return c.Password, nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", errors.New("redis.password_file: " + err.Error())
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", errors.New("redis.password_file: " + c.PasswordFile + " is empty")
	}
	return pw, nil
}

// loadPassword reads redis.password_file into Password at load, unless
// THROTTLED_REDIS_PASSWORD (origins: where each path was set) overrides
// it; the file and the password set in the same place are an error.
func (c *RedisConfig) loadPassword(origins map[string]string) []fieldErr {
	if c.PasswordFile == "" {
		return nil
	}
	pwEnv, fileEnv := origins["redis.password"] != "", origins["redis.password_file"] != ""
	switch {
	case c.Password != "" && pwEnv == fileEnv:
		return []fieldErr{{"redis.password_file", "set redis.password or redis.password_file, not both"}}
	case c.Password != "" && pwEnv: // the environment wins
		c.PasswordFile = ""
		return nil
	}
	c.Password = ""
	pw, err := c.ReadPassword()
	if err != nil {
		return []fieldErr{{"redis.password_file", strings.TrimPrefix(err.Error(), "redis.password_file: ")}}
	}
	c.Password, c.PasswordFile = pw, ""
	return nil
}

// ClientTLS is the TLS configuration of the connections to Redis from
// redis.tls, nil when no field of it is set. Its errors name the field.
func (c *RedisConfig) ClientTLS() (*tls.Config, error) {
	cfg, fe := c.TLS.client()
	if fe != nil {
		return nil, errors.New(fe.path + ": " + fe.msg)
	}
	return cfg, nil
}

func (t *RedisTLS) client() (*tls.Config, *fieldErr) {
	if *t == (RedisTLS{}) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &fieldErr{"redis.tls.ca_file", err.Error()}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &fieldErr{"redis.tls.ca_file", t.CAFile + " holds no PEM certificate"}
		}
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.CertFile == "":
		return nil, &fieldErr{"redis.tls.cert_file", "required with redis.tls.key_file"}
	case t.KeyFile == "":
		return nil, &fieldErr{"redis.tls.key_file", "required with redis.tls.cert_file"}
	default:
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &fieldErr{"redis.tls.cert_file", "with redis.tls.key_file: " + err.Error()}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// validate checks the redis section: one kind of Redis, addresses,
// credentials and the TLS files.
func (c *RedisConfig) validate() []fieldErr {
	var errs []fieldErr
	add := func(path, msg string) { errs = append(errs, fieldErr{path, msg}) }
	if err := redisstore.CheckPrefix(c.Prefix); err != nil {
		add("redis.prefix", err.Error())
	}
	sentinel := c.Sentinel.Master != "" || len(c.Sentinel.Addrs) > 0 || c.Sentinel.Password != ""
	if n := btoi(c.URL != "") + btoi(len(c.ClusterAddrs) > 0) + btoi(sentinel); n > 1 {
		add("redis", "set one of redis.url, redis.cluster_addrs and redis.sentinel, not several")
	}
	var urlOpt *redis.Options
	if c.URL != "" {
		var err error
		if urlOpt, err = redis.ParseURL(c.URL); err != nil {
			add("redis.url", ScrubURL(err.Error(), c.URL))
		}
	}
	errs = append(errs, addrErrs("redis.cluster_addrs", c.ClusterAddrs)...)
	if sentinel {
		if c.Sentinel.Master == "" {
			add("redis.sentinel.master", "required with redis.sentinel: the name the sentinels monitor")
		}
		if len(c.Sentinel.Addrs) == 0 {
			add("redis.sentinel.addrs", "required with redis.sentinel: the sentinels' host:port")
		}
		errs = append(errs, addrErrs("redis.sentinel.addrs", c.Sentinel.Addrs)...)
	}
	errs = append(errs, c.validateAuth(urlOpt)...)
	if _, fe := c.TLS.client(); fe != nil {
		errs = append(errs, *fe)
	}
	if !c.Configured() && (c.Username != "" || c.Password != "" || c.PasswordFile != "" || c.TLS != (RedisTLS{})) {
		add("redis", "credentials or TLS without a Redis: set redis.url, redis.cluster_addrs or redis.sentinel")
	}
	return errs
}

// validateAuth checks the credentials: one place for each, a username only
// with a password, a readable password file.
func (c *RedisConfig) validateAuth(urlOpt *redis.Options) []fieldErr {
	var errs []fieldErr
	add := func(path, msg string) { errs = append(errs, fieldErr{path, msg}) }
	if c.Password != "" && c.PasswordFile != "" {
		add("redis.password_file", "set redis.password or redis.password_file, not both")
	} else if _, err := c.ReadPassword(); err != nil {
		add("redis.password_file", strings.TrimPrefix(err.Error(), "redis.password_file: "))
	}
	if urlOpt != nil && urlOpt.Password != "" && (c.Password != "" || c.PasswordFile != "") {
		add("redis.password", "redis.url carries a password too: set it in one place")
	}
	if urlOpt != nil && urlOpt.Username != "" && c.Username != "" {
		add("redis.username", "redis.url carries a username too: set it in one place")
	}
	if c.Username != "" && c.Password == "" && c.PasswordFile == "" {
		add("redis.password", "missing: redis.username "+strconv.Quote(c.Username)+
			" needs a password (redis.password, redis.password_file or THROTTLED_REDIS_PASSWORD)")
	}
	return errs
}

// addrErrs reports the entries of list at path that are not host:port.
func addrErrs(path string, list []string) []fieldErr {
	var errs []fieldErr
	for i, a := range list {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fieldErr{path + "[" + itoa(i) + "]", "want host:port: " + err.Error()})
		}
	}
	return errs
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ScrubURL hides the password of the URL raw wherever msg holds it (the
// errors of url.Parse quote the whole URL).
func ScrubURL(msg, raw string) string {
	rest, ok := strings.CutPrefix(raw[strings.Index(raw, "://")+1:], "//")
	if !ok {
		return msg
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return msg
	}
	if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
		return strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}
