package config

import (
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestConfigPrometheusSelector: with prometheus.url and a default query in
// use, prometheus.selector is required and must be label matchers.
func TestConfigPrometheusSelector(t *testing.T) {
	prom := testenv.ReadmeConfig + "prometheus:\n  url: http://127.0.0.1:9090\n"
	for _, tc := range []struct {
		name, src, want string // want "": valid
	}{
		{"defaults, no selector", prom, "prometheus.selector: required with prometheus.url"},
		{"latency query only", prom + "  latency_query: vector(0.1)\n", "prometheus.selector: required"},
		{"selector", prom + "  selector: 'job=\"checkout\"'\n", ""},
		{"bad selector", prom + "  selector: checkout\n", "prometheus.selector: want PromQL label matchers"},
		{"both queries", prom + "  latency_query: vector(0.1)\n  error_ratio_query: vector(0)\n", ""},
		{"no prometheus", testenv.ReadmeConfig, ""},
	} {
		_, err := Parse([]byte(tc.src), nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
