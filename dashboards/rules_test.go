package dashboards

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled/internal/testenv"
)

// promtool runs the real promtool with args and fails the test unless it
// succeeds.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(testenv.Binary(t, "promtool"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestAlertRulesPromtoolCheck(t *testing.T) {
	out := promtool(t, "check", "rules", alertsFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules: %s", out)
	}
}

// TestAlertRulesUnit runs alerts_test.yml: each alert fires on the series
// it is meant for, with its labels and rendered annotations, and stays
// quiet otherwise.
func TestAlertRulesUnit(t *testing.T) {
	promtool(t, "test", "rules", alertTestsFile)
}

// requiredAlerts are the alerts the issue asks for.
var requiredAlerts = []string{
	"ThrottledRefusalSpike",         // refusal spike
	"ThrottledLimiterLatencyHigh",   // limiter latency
	"ThrottledStoreErrors",          // store errors
	"ThrottledFallbackActive",       // fallback active
	"ThrottledControllerStale",      // controller stale
	"ThrottledControllerLeaderless", // leaderless
}

func TestAlertRulesAreComplete(t *testing.T) {
	names := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			t.Errorf("rule %q: not an alerting rule", r.Record)
			continue
		}
		if names[r.Alert] {
			t.Errorf("%s: defined twice", r.Alert)
		}
		names[r.Alert] = true
		d, err := model.ParseDuration(r.For)
		if err != nil || time.Duration(d) < time.Minute {
			t.Errorf("%s: for %q: want at least 1m (a blip must not page)", r.Alert, r.For)
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q: want warning or critical", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if u := unknownMetrics(r.Expr); len(u) > 0 {
			t.Errorf("%s: uses metrics throttled does not export: %v", r.Alert, u)
		}
	}
	for _, a := range requiredAlerts {
		if !names[a] {
			t.Errorf("no alert %s in %s", a, alertsFile)
		}
	}
}

// aggregation is a PromQL aggregation, with its by/without clause if it
// comes first (the house style; a trailing `by` reads as missing).
var aggregation = regexp.MustCompile(`\b(sum|min|max|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)\b\s*(?:(by|without)\s*\(([^()]*)\))?`)

// withoutJob lists the aggregations of expr that do not keep the job label:
// those without `by (..., job, ...)`.
func withoutJob(expr string) []string {
	var out []string
	for _, m := range aggregation.FindAllStringSubmatch(expr, -1) {
		if m[2] != "by" || !slices.Contains(strings.FieldsFunc(m[3], labelSep), "job") {
			out = append(out, m[0])
		}
	}
	return out
}

func labelSep(r rune) bool { return r == ',' || r == ' ' || r == ')' || r == '\n' }

// TestAlertRulesAggregateByJob: one Prometheus may scrape several
// deployments (one job each), so every aggregation keeps the job label and
// one deployment's series never hide or trip another's alert.
func TestAlertRulesAggregateByJob(t *testing.T) {
	for _, r := range loadRules(t) {
		if bad := withoutJob(r.Expr); len(bad) > 0 {
			t.Errorf("%s: aggregations drop the job label: %q", r.Alert, bad)
		}
	}
}

func TestWithoutJobIsCaught(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (job) (x) > 1`:                              "",
		`histogram_quantile(0.9, sum by (le, job) (r))`:     "",
		`max by (job, instance) (a) > on (job, instance) b`: "",
		`sum(throttled_controller_leader) > 1`:              "sum",
		`a / ignoring (result) group_left sum by (job) (b)`: "",
		`max by (instance) (a)`:                             "max by (instance)",
		`sum without (instance) (a)`:                        "sum without (instance)",
		`sum by (jobs) (a)`:                                 "sum by (jobs)",
	} {
		if got := strings.Join(withoutJob(expr), ","); got != want {
			t.Errorf("withoutJob(%q) = %q, want %q", expr, got, want)
		}
	}
}

// runbookBase is where every alert's runbook_url points: a section of the
// README on the default branch.
const runbookBase = "https://github.com/throttledhq/throttled/blob/main/README.md#"

// TestAlertRulesLinkTheirRunbook: every alert's runbook_url is the anchor
// of its own `### AlertName` section under the README's `## Runbook`.
func TestAlertRulesLinkTheirRunbook(t *testing.T) {
	sections := runbookSections(t)
	for _, r := range loadRules(t) {
		want := runbookBase + githubAnchor(r.Alert)
		if got := r.Annotations["runbook_url"]; got != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, want)
		}
		if !sections[r.Alert] {
			t.Errorf("%s: no \"### %s\" section under \"## Runbook\" in %s", r.Alert, r.Alert, readmeFile)
		}
	}
}

// runbookSections returns the ### headings of the README's last ##
// section, which must be "## Runbook".
func runbookSections(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	_, rb, ok := strings.Cut(string(b), "\n## Runbook\n")
	if !ok {
		t.Fatalf("%s: no \"## Runbook\" section", readmeFile)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(rb, "\n") {
		if strings.HasPrefix(line, "## ") {
			t.Fatalf("%s: section %q follows the Runbook, which must come last", readmeFile, line)
		}
		if h, ok := strings.CutPrefix(line, "### "); ok {
			out[strings.TrimSpace(h)] = true
		}
	}
	return out
}

// githubAnchor is the fragment GitHub gives a Markdown heading: lower case,
// spaces to hyphens, punctuation other than - and _ dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestGithubAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"ThrottledControllerLeaderless": "throttledcontrollerleaderless",
		"Dashboards and alerts":         "dashboards-and-alerts",
		"Using the middleware from Go":  "using-the-middleware-from-go",
		"Top consumers (refused)":       "top-consumers-refused",
	} {
		if got := githubAnchor(in); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPrometheusConfigPromtoolCheck checks deploy/prometheus/prometheus.yml
// with promtool, its rule_files rewritten from the container paths that
// docker-compose.yml mounts to the files on this machine.
func TestPrometheusConfigPromtoolCheck(t *testing.T) {
	c := loadCompose(t)
	prom := c.service(t, "prometheus")
	var cfg map[string]any
	readYAML(t, promConfigFile, &cfg)
	files, _ := cfg["rule_files"].([]any)
	if len(files) == 0 {
		t.Fatalf("%s: no rule_files", promConfigFile)
	}
	var local []any
	for _, f := range files {
		host, ok := prom.hostPath(fmtString(f))
		if !ok {
			t.Fatalf("%s: rule file %v is not mounted into the prometheus service", promConfigFile, f)
		}
		abs, err := filepath.Abs(host)
		if err != nil {
			t.Fatal(err)
		}
		local = append(local, abs)
	}
	cfg["rule_files"] = local
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "check", "config", tmp)
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(loadRules(t))); !strings.Contains(out, want) {
		t.Fatalf("promtool check config did not load the rules (want %q):\n%s", want, out)
	}
	t.Log(out)
}

func fmtString(v any) string {
	s, _ := v.(string)
	return s
}
