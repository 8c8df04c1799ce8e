package dashboards

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
