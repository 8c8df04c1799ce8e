package signals

import (
	"fmt"
	"regexp"
	"strings"
)

// selectorRE is a list of PromQL label matchers without the braces:
// name op "value", comma-separated (op is =, !=, =~ or !~; a trailing comma
// is allowed, as in PromQL).
var selectorRE = regexp.MustCompile(`^\s*` + matcher + `(\s*,\s*` + matcher + `)*\s*,?\s*$`)

const matcher = `[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')`

// ParseSelector checks a selector, label matchers such as `job="checkout"`
// or `{job="checkout", namespace="prod"}`, and returns it as the default
// queries use it: without braces, spaces or a trailing comma at its ends.
func ParseSelector(s string) (string, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		t = t[1 : len(t)-1]
	}
	if !selectorRE.MatchString(t) {
		return "", fmt.Errorf(`%w: Selector %q: want PromQL label matchers such as job="checkout"`, ErrInvalidSettings, s)
	}
	return strings.TrimRight(strings.TrimSpace(t), ", "), nil
}

// LatencyQuery is DefaultLatencyQuery on the series selector selects
// (label matchers, as ParseSelector returns them); "" gives
// DefaultLatencyQuery itself.
func LatencyQuery(selector string) string {
	if selector == "" {
		return DefaultLatencyQuery
	}
	return `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{` + selector + `}[1m])))`
}

// ErrorRatioQuery is DefaultErrorRatioQuery on the series selector selects;
// "" gives DefaultErrorRatioQuery itself.
func ErrorRatioQuery(selector string) string {
	if selector == "" {
		return DefaultErrorRatioQuery
	}
	return `(sum(rate(http_requests_total{` + selector + `,code=~"5.."}[1m])) or vector(0)) / sum(rate(http_requests_total{` +
		selector + `}[1m]))`
}
