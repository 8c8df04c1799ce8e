package dashboards

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestComposeReferencedFilesExist(t *testing.T) {
	c := loadCompose(t)
	for _, s := range c.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s: neither image nor build", s.name)
		}
		checkBuild(t, s)
		for _, f := range strs(s.EnvFile) {
			mustExist(t, s.name+" env_file", filepath.Join(repoRoot, f))
		}
		for _, m := range s.mounts() {
			if !m.bind() {
				if _, ok := c.Volumes[m.source]; !ok {
					t.Errorf("service %s: named volume %q is not declared under volumes:", s.name, m.source)
				}
				continue
			}
			mustExist(t, s.name+" volume "+m.source, filepath.Join(repoRoot, m.source))
		}
		checkArgPaths(t, s)
	}
}

// checkArgPaths requires every absolute path in the service's arguments
// that lies under a bind mount (a config or script it runs) to exist.
func checkArgPaths(t *testing.T, s *service) {
	t.Helper()
	for _, a := range s.args() {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v // --config.file=/etc/prometheus/prometheus.yml
		}
		if host, ok := s.hostPath(a); ok && strings.HasPrefix(a, "/") {
			mustExist(t, s.name+" argument "+a, host)
		}
	}
}

func checkBuild(t *testing.T, s *service) {
	t.Helper()
	ctx, dockerfile := "", "Dockerfile"
	switch b := s.Build.(type) {
	case nil:
		return
	case string:
		ctx = b
	case map[string]any:
		ctx = fmt.Sprint(b["context"])
		if d, ok := b["dockerfile"].(string); ok {
			dockerfile = d
		}
	}
	mustExist(t, s.name+" build context", filepath.Join(repoRoot, ctx))
	mustExist(t, s.name+" Dockerfile", filepath.Join(repoRoot, ctx, dockerfile))
}

func mustExist(t *testing.T, what, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestComposeServicesAndPorts(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"redis", "prometheus", "grafana", "throttled", "upstream", "loadgen"} {
		c.service(t, name)
	}
	published := map[string]string{}
	for _, s := range c.Services {
		for _, d := range strs(s.DependsOn) {
			if c.Services[d] == nil {
				t.Errorf("service %s depends on %q, which is not a service", s.name, d)
			}
		}
		for _, p := range s.Ports {
			hp := publishedPort(p)
			if prev, dup := published[hp]; dup && hp != "" {
				t.Errorf("host port %s is published by both %s and %s", hp, prev, s.name)
			}
			published[hp] = s.name
		}
	}
}

func TestComposeThrottledAgreesWithConfig(t *testing.T) {
	c := loadCompose(t)
	s, cfg := throttledService(t, c)
	ports := s.containerPorts()
	for what, addr := range map[string]string{"listen": cfg.Listen, "admin.listen": cfg.Admin.Listen} {
		if p := listenPort(t, what, addr); !ports[p] {
			t.Errorf("throttled service does not expose %s port %s (expose/ports: %v %v)", what, p, s.Expose, s.Ports)
		}
	}
	reachable(t, c, "upstream", cfg.Upstream, "80")
	if svc, _ := reachable(t, c, "redis.url", cfg.Redis.URL, "6379"); svc != "redis" {
		t.Errorf("redis.url %q: want the redis service", cfg.Redis.URL)
	}
	if svc, _ := reachable(t, c, "prometheus.url", cfg.Prometheus.URL, "9090"); svc != "prometheus" {
		t.Errorf("prometheus.url %q: want the prometheus service", cfg.Prometheus.URL)
	}
	for _, d := range []string{"redis", "upstream"} {
		if !contains(strs(s.DependsOn), d) {
			t.Errorf("throttled does not depend on %s", d)
		}
	}
}

func TestComposePrometheusScrapesThrottled(t *testing.T) {
	c := loadCompose(t)
	_, cfg := throttledService(t, c)
	prom := c.service(t, "prometheus")
	in, ok := flagValue(prom.args(), "config.file")
	if host, mounted := prom.hostPath(in); !ok || !mounted || !sameFile(host, promConfigFile) {
		t.Fatalf("prometheus: --config.file %q is not %s mounted into the container", in, promConfigFile)
	}
	var sc scrapeConfig
	readYAML(t, promConfigFile, &sc)
	want := "throttled:" + listenPort(t, "admin.listen", cfg.Admin.Listen)
	found := false
	for _, job := range sc.ScrapeConfigs {
		for _, st := range job.StaticConfigs {
			for _, tg := range st.Targets {
				if h, _, _ := net.SplitHostPort(tg); h == "localhost" {
					continue // prometheus itself
				}
				reachable(t, c, "scrape target of job "+job.JobName, tg, "")
				if tg == want && (job.MetricsPath == "" || job.MetricsPath == "/metrics") {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("%s: no job scrapes %s/metrics (throttled's admin listener)", promConfigFile, want)
	}
	rules := false
	for _, f := range sc.RuleFiles {
		host, ok := prom.hostPath(f)
		if !ok {
			t.Errorf("rule file %s is not mounted into the prometheus service", f)
			continue
		}
		mustExist(t, "rule file "+f, host)
		rules = rules || sameFile(host, alertsFile)
	}
	if !rules {
		t.Errorf("prometheus does not load %s (rule_files %v)", alertsFile, sc.RuleFiles)
	}
}

func TestComposeGrafanaProvisioning(t *testing.T) {
	c := loadCompose(t)
	g := c.service(t, "grafana")
	dir, ok := g.hostPath("/etc/grafana/provisioning")
	if !ok || !sameFile(dir, filepath.Dir(filepath.Dir(datasourceFile))) {
		t.Fatalf("grafana: /etc/grafana/provisioning is not %s (got %q)", filepath.Dir(filepath.Dir(datasourceFile)), dir)
	}
	var ds struct {
		Datasources []struct{ URL string } `yaml:"datasources"`
	}
	readYAML(t, datasourceFile, &ds)
	for _, d := range ds.Datasources {
		if svc, _ := reachable(t, c, "grafana datasource url", d.URL, "80"); svc != "prometheus" {
			t.Errorf("grafana datasource url %q: want the prometheus service", d.URL)
		}
	}
	var prov struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, providerFile, &prov)
	if len(prov.Providers) == 0 {
		t.Fatalf("%s: no providers", providerFile)
	}
	for _, p := range prov.Providers {
		host, ok := g.hostPath(p.Options.Path)
		if p.Type != "file" || !ok || !sameFile(host, ".") {
			t.Errorf("%s: provider %+v: want type file with options.path mounted from dashboards/ (got %q)", providerFile, p, host)
		}
	}
	if home := g.env()["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		host, ok := g.hostPath(home)
		if !ok {
			t.Errorf("grafana home dashboard %s is not mounted", home)
		}
		mustExist(t, "grafana home dashboard", host)
	}
}

func TestComposeLoadGenerator(t *testing.T) {
	c := loadCompose(t)
	_, cfg := throttledService(t, c)
	lg := c.service(t, "loadgen")
	target := lg.env()["TARGET"]
	if _, port := reachable(t, c, "loadgen TARGET", target, "80"); port != listenPort(t, "listen", cfg.Listen) {
		t.Errorf("loadgen TARGET %q: want throttled's proxy port (listen %s)", target, cfg.Listen)
	}
	seed := c.service(t, "seed")
	admin := seed.env()["ADMIN_URL"]
	if _, port := reachable(t, c, "seed ADMIN_URL", admin, "80"); port != listenPort(t, "admin.listen", cfg.Admin.Listen) {
		t.Errorf("seed ADMIN_URL %q: want throttled's admin port (admin.listen %s)", admin, cfg.Admin.Listen)
	}
	if tok := seed.env()["ADMIN_TOKEN"]; tok == "" || tok != cfg.Admin.Tokens["write"] {
		t.Errorf("seed ADMIN_TOKEN %q: want the config's admin.tokens.write", tok)
	}
	loadgen := scriptOf(t, lg)
	seeded := scriptOf(t, seed)
	for _, tier := range []string{"free", "premium"} {
		if !bytes.Contains(loadgen, []byte("X-API-Key: "+tier)) {
			t.Errorf("the load generator sends no %s client (X-API-Key: %s...)", tier, tier)
		}
	}
	for _, key := range []string{"premium-client-1", "premium-client-2"} {
		if bytes.Contains(loadgen, []byte(key)) && !bytes.Contains(seeded, []byte("assign "+key+" premium")) {
			t.Errorf("the load generator uses %s, which the seed does not assign to premium", key)
		}
	}
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"FROM golang:1.26", " AS build", "FROM gcr.io/distroless/static",
		"CGO_ENABLED=0", "./cmd/throttled", `ENTRYPOINT ["/usr/local/bin/throttled"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	mustExist(t, "Dockerfile builds", filepath.Join(repoRoot, "cmd", "throttled", "main.go"))
	exposed := map[string]bool{}
	for _, line := range strings.Split(df, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "EXPOSE" {
			for _, p := range f[1:] {
				exposed[strings.TrimSuffix(p, "/tcp")] = true
			}
		}
	}
	_, cfg := throttledService(t, loadCompose(t))
	for what, addr := range map[string]string{"listen": cfg.Listen, "admin.listen": cfg.Admin.Listen} {
		if p := listenPort(t, what, addr); !exposed[p] {
			t.Errorf("Dockerfile does not EXPOSE the %s port %s", what, p)
		}
	}
}
