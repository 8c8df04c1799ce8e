package testenv

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// target serves a registry with one gauge set to 42 and returns its host:port.
func target(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "testenv_probe", Help: "probe"})
	g.Set(42)
	reg.MustRegister(g)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPrometheusScrapesTarget(t *testing.T) {
	p := StartPrometheus(t, target(t))
	if p.Job() != DefaultJob {
		t.Fatalf("job %q, want %q", p.Job(), DefaultJob)
	}
	v := p.WaitForSeries(t, `testenv_probe{job="throttled"}`, 20*time.Second)
	if len(v) != 1 || v[0].Value != 42 {
		t.Fatalf("testenv_probe = %v, want one sample of 42", v)
	}
}

func TestPrometheusJobAndRules(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yml")
	err := os.WriteFile(rules, []byte(`groups:
  - name: probe
    rules:
      - record: testenv:probe:doubled
        expr: testenv_probe * 2
      - alert: ProbeHigh
        expr: testenv_probe > 10
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p := StartPrometheusWith(t, PrometheusConfig{Targets: []string{target(t)}, Job: "custom", RuleFiles: []string{rules}})
	p.WaitForSeries(t, `up{job="custom"} == 1`, 20*time.Second)
	v := p.WaitForSeries(t, `testenv:probe:doubled`, 20*time.Second)
	if v[0].Value != 84 {
		t.Fatalf("recorded %v, want 84", v[0].Value)
	}
	p.WaitForSeries(t, `ALERTS{alertname="ProbeHigh"}`, 20*time.Second)
}

func TestPrometheusKillAndRestart(t *testing.T) {
	p := StartPrometheus(t)
	ctx := context.Background()
	p.Kill()
	if _, _, _, err := p.API().Query(ctx, "vector(1)", time.Time{}); err == nil {
		t.Fatal("query succeeded after Kill")
	}
	p.Start()
	if _, _, _, err := p.API().Query(ctx, "vector(1)", time.Time{}); err != nil {
		t.Fatalf("query after restart: %v", err)
	}
}

func TestPrometheusConfigQuotes(t *testing.T) {
	p := &Prometheus{tb: t, cfg: PrometheusConfig{Targets: []string{"127.0.0.1:1", "127.0.0.1:2"}, Job: `a"b`, Interval: time.Second}}
	got := p.config()
	for _, want := range []string{"scrape_interval: 1s", "evaluation_interval: 1s", `job_name: "a\"b"`, `targets: ["127.0.0.1:1", "127.0.0.1:2"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}
