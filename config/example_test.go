package config_test

import (
	"fmt"

	"github.com/throttledhq/throttled/config"
)

// Parse reads a configuration as Load reads a file: defaults filled,
// every value checked. Problems come back all at once, each at its line.
func ExampleParse() {
	_, err := config.Parse([]byte(`upstream: http://127.0.0.1:8081
admin: { listen: "127.0.0.1:9090", tokens: { write: a-long-random-token-0123456789 } }
tiers:
  free: { rate: 0, period: 1s, burst: 10, priority: 1 }
rules:
  - { name: per-key, match: { path: / }, key: "header:X-API-Key" }
controller:
  period: 10ms
`), nil)
	fmt.Println(err)
	// Output:
	// line 4: tiers.free.rate: 0: want 1..1000000000000
	// line 8: controller.period: want 100ms..1h
}
