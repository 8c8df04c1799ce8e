package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ReadmeConfig is the minimal configuration of the README's quick start,
// exactly (TestReadmeConfigParses holds the README to it).
const ReadmeConfig = `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:8081
admin:
  listen: 127.0.0.1:9090
  tokens:
    write: change-me
redis:
  url: redis://127.0.0.1:6379/0
tiers:
  free:    { rate: 10,  period: 1s, burst: 10,  priority: 1 }
  premium: { rate: 100, period: 1s, burst: 100, priority: 0 }
default_tier: free   # clients without an assignment; anonymous ones too
rules:
  - name: per-key
    match: { path: / }
    key: header:X-API-Key
  - name: per-ip
    match: { path: / }
    key: ip
identity:
  # The load balancers or ingress in front of throttled (CIDRs or addresses).
  # Only their X-Forwarded-For is believed; empty, every client behind one of
  # them is its single address and shares one per-ip quota.
  trusted_proxies: []
`

// WriteToken is the admin API's write token in ServeConfig.
const WriteToken = "test-write-token-0123456789"

// ServeConfig is a serve configuration on free loopback ports in front of
// upstream ("" for none: a controller-only replica), on the Redis at
// redisURL ("" for the embedded store): tiers free (5/min, the default
// tier) and premium (100/min), one per-key rule, a 1 s controller period.
func ServeConfig(upstream, redisURL string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
upstream: %s
admin:
  listen: 127.0.0.1:0
  tokens:
    write: %s
redis:
  url: %q
tiers:
  free:    { rate: 5,   period: 1m, burst: 5,   priority: 1 }
  premium: { rate: 100, period: 1m, burst: 100, priority: 0 }
default_tier: free
rules:
  - name: per-key
    match: { path: / }
    key: header:X-API-Key
controller:
  period: 1s
`, upstream, WriteToken, redisURL)
}

// BadConfig has many problems of every kind: YAML types, unknown keys,
// durations, tiers, rules.
const BadConfig = `listen: 127.0.0.1:8080
upstream: ftp://x
admin:
  tokens:
    write: 9f3c1a7e5b2d4f6081c3e5a7b9d1f2e4
    admin: k3y
controller:
  perod: 5s
  latency_target: soon
tiers:
  free:    { rate: ten,  period: 1s, burst: 10,  priority: 1 }
  premium: { rate: 0, period: 0s, burst: 100, priority: 5000 }
  gold: [1, 2]
rules:
  - name: per-key
    match: { path: / }
    key: cookie
  - name: per-ip
    match: { path: x }
    key: ip
    mode: later
fallback:
  instances: "many"
`

// WriteFile writes src to throttled.yaml in a temporary directory of tb
// and returns its path.
func WriteFile(tb testing.TB, src string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "throttled.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
