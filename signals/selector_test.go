package signals

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`job="checkout"`, `job="checkout"`, true},
		{` {job="checkout"} `, `job="checkout"`, true},
		{`job="checkout", namespace=~"prod|eu-.*"`, `job="checkout", namespace=~"prod|eu-.*"`, true},
		{`job!="x",env!~"dev.*",`, `job!="x",env!~"dev.*"`, true},
		{`path="a\"b"`, `path="a\"b"`, true},
		{``, ``, false},
		{`{}`, ``, false},
		{`checkout`, ``, false},
		{`job=checkout`, ``, false},
		{`job="x"} or vector(1) {a="b"`, ``, false},
		{`1job="x"`, ``, false},
	} {
		got, err := ParseSelector(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSelector(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("ParseSelector(%q) error %v is not ErrInvalidSettings", tc.in, err)
		}
	}
}

// TestDefaultQueriesUseSelector: every metric the default latency and
// error-ratio queries read is filtered by the selector.
func TestDefaultQueriesUseSelector(t *testing.T) {
	const sel = `job="checkout"`
	for name, q := range map[string]string{"latency": LatencyQuery(sel), "error ratio": ErrorRatioQuery(sel)} {
		reads := strings.Count(q, "http_request")
		if reads == 0 || strings.Count(q, "{"+sel) != reads {
			t.Errorf("%s query %q: want {%s on each of its %d metrics", name, q, sel, reads)
		}
	}
	if q := ErrorRatioQuery(sel); !strings.Contains(q, `{`+sel+`,code=~"5.."}`) {
		t.Errorf("error ratio query %q: want the 5xx matcher beside the selector", q)
	}
}

// TestPrometheusQueries: Queries reports the queries in use, the defaults
// with the selector, a given query as given, no saturation unless set.
func TestPrometheusQueries(t *testing.T) {
	p, err := NewPrometheus(PrometheusSettings{URL: "http://h:9090", Selector: `{job="a"}`, LatencyQuery: "vector(1)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Queries()
	want := map[string]string{"latency": "vector(1)", "error_ratio": ErrorRatioQuery(`job="a"`), "admitted": DefaultAdmittedQuery}
	if len(q) != len(want) {
		t.Fatalf("Queries() = %v, want %v", q, want)
	}
	for k, v := range want {
		if q[k] != v {
			t.Errorf("Queries()[%s] = %q, want %q", k, q[k], v)
		}
	}
}

// TestNewPrometheusRequiresSelector: a default latency or error-ratio
// query needs a selector, or it would steer by every service Prometheus
// scrapes; with both queries given none is needed.
func TestNewPrometheusRequiresSelector(t *testing.T) {
	for _, tc := range []struct {
		s    PrometheusSettings
		want string // "" for no error
	}{
		{PrometheusSettings{URL: "http://h"}, "Selector is empty"},
		{PrometheusSettings{URL: "http://h", LatencyQuery: "vector(1)"}, "Selector is empty"},
		{PrometheusSettings{URL: "http://h", ErrorRatioQuery: "vector(0)"}, "Selector is empty"},
		{PrometheusSettings{URL: "http://h", Selector: "checkout"}, `Selector "checkout"`},
		{PrometheusSettings{URL: "http://h", Selector: `job="checkout"`}, ""},
		{PrometheusSettings{URL: "http://h", LatencyQuery: "vector(1)", ErrorRatioQuery: "vector(0)"}, ""},
	} {
		_, err := NewPrometheus(tc.s, nil)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("NewPrometheus(%+v) error = %v, want %q", tc.s, err, tc.want)
		}
	}
}
