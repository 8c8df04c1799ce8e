package dashboards

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// compose is the part of docker-compose.yml the tests read. Decoding is
// strict, so a misspelt key (depend_on) fails.
type compose struct {
	Name     string              `yaml:"name"`
	Services map[string]*service `yaml:"services"`
	Volumes  map[string]any      `yaml:"volumes"`
	Networks map[string]any      `yaml:"networks"`
}

type service struct {
	name        string
	Image       string   `yaml:"image"`
	Build       any      `yaml:"build"` // "dir" or {context, dockerfile}
	Command     any      `yaml:"command"`
	Entrypoint  any      `yaml:"entrypoint"`
	Volumes     []string `yaml:"volumes"` // short syntax
	Environment any      `yaml:"environment"`
	EnvFile     any      `yaml:"env_file"`
	Ports       []string `yaml:"ports"`
	Expose      []string `yaml:"expose"`
	DependsOn   any      `yaml:"depends_on"`
	Healthcheck any      `yaml:"healthcheck"`
	Restart     string   `yaml:"restart"`
	Networks    any      `yaml:"networks"`
	User        string   `yaml:"user"`
}

func loadCompose(t *testing.T) *compose {
	t.Helper()
	b, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.UnmarshalWithOptions(b, &c, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("%s: %s", composeFile, yaml.FormatError(err, false, true))
	}
	if len(c.Services) == 0 {
		t.Fatalf("%s: no services", composeFile)
	}
	for name, s := range c.Services {
		s.name = name
	}
	return &c
}

func (c *compose) service(t *testing.T, name string) *service {
	t.Helper()
	s := c.Services[name]
	if s == nil {
		t.Fatalf("%s: no service %q", composeFile, name)
	}
	return s
}

// strs turns a compose string-or-list into a list.
func strs(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	case map[string]any: // depends_on with conditions
		out := make([]string, 0, len(v))
		for k := range v {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	return []string{fmt.Sprint(v)}
}

// args is the service's entrypoint followed by its command.
func (s *service) args() []string { return append(strs(s.Entrypoint), strs(s.Command)...) }

// env is the service's environment as a map (compose accepts a map or a
// list of K=V).
func (s *service) env() map[string]string {
	out := map[string]string{}
	switch e := s.Environment.(type) {
	case map[string]any:
		for k, v := range e {
			out[k] = fmt.Sprint(v)
		}
	case []any:
		for _, kv := range e {
			k, v, _ := strings.Cut(fmt.Sprint(kv), "=")
			out[k] = v
		}
	}
	return out
}

// mount is one short-syntax volume: a bind mount when source is a path.
type mount struct{ source, target string }

func (m mount) bind() bool {
	return strings.HasPrefix(m.source, ".") || strings.HasPrefix(m.source, "/")
}

func (s *service) mounts() []mount {
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			continue // anonymous volume
		}
		out = append(out, mount{source: parts[0], target: parts[1]})
	}
	return out
}

// hostPath maps a path inside the service's container to the file on this
// machine through the service's bind mounts.
func (s *service) hostPath(p string) (string, bool) {
	for _, m := range s.mounts() {
		if !m.bind() {
			continue
		}
		if rel, ok := strings.CutPrefix(p, m.target); ok && (rel == "" || rel[0] == '/') {
			return filepath.Join(repoRoot, m.source, rel), true
		}
	}
	return "", false
}

// containerPorts are the ports the service listens on that others can
// reach: expose plus the container side of ports.
func (s *service) containerPorts() map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Expose {
		out[p] = true
	}
	for _, p := range s.Ports {
		p, _, _ = strings.Cut(p, "/") // 8080:8080/tcp
		out[p[strings.LastIndex(p, ":")+1:]] = true
	}
	return out
}

// publishedPort is the host side of a ports entry ("" when not published).
func publishedPort(p string) string {
	p, _, _ = strings.Cut(p, "/")
	parts := strings.Split(p, ":")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}

func sameFile(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// reachable requires rawURL (or host:port when rawURL has no scheme) to
// name a compose service and a port it listens on.
func reachable(t *testing.T, c *compose, what, rawURL, defPort string) (svc, port string) {
	t.Helper()
	hostport := rawURL
	if strings.Contains(rawURL, "://") {
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Fatalf("%s: %q: %v", what, rawURL, err)
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, defPort
	}
	s := c.Services[host]
	if s == nil {
		t.Errorf("%s: %q: host %q is not a compose service", what, rawURL, host)
		return host, port
	}
	if !s.containerPorts()[port] {
		t.Errorf("%s: %q: service %s does not expose port %s (expose/ports: %v %v)", what, rawURL, host, port, s.Expose, s.Ports)
	}
	return host, port
}

// flagValue returns the value of --name (or -name) in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// throttledService returns the throttled service and the config it runs.
func throttledService(t *testing.T, c *compose) (*service, throttledConfig) {
	t.Helper()
	s := c.service(t, "throttled")
	args := s.args()
	if len(args) == 0 || args[0] != "serve" {
		t.Errorf("throttled: command %v: want serve --config FILE", args)
	}
	in, ok := flagValue(args, "config")
	if !ok {
		t.Fatalf("throttled: command %v has no --config", args)
	}
	host, ok := s.hostPath(in)
	if !ok || !sameFile(host, throttledConf) {
		t.Fatalf("throttled: --config %s is not %s mounted into the container (got %q)", in, throttledConf, host)
	}
	var cfg throttledConfig
	readYAML(t, throttledConf, &cfg)
	return s, cfg
}

// listenPort requires addr to listen on every interface (a container's
// loopback is unreachable from the others) and returns its port.
func listenPort(t *testing.T, what, addr string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s %q: %v", what, addr, err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("%s %q: listen on 0.0.0.0 inside a container, not %s", what, addr, host)
	}
	return port
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

type scrapeConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// scriptOf reads the script a service runs with /bin/sh SCRIPT.
func scriptOf(t *testing.T, s *service) []byte {
	t.Helper()
	args := s.args()
	if len(args) < 2 || args[0] != "/bin/sh" {
		t.Fatalf("service %s: entrypoint %v: want /bin/sh SCRIPT", s.name, args)
	}
	host, ok := s.hostPath(args[1])
	if !ok {
		t.Fatalf("service %s: script %s is not mounted", s.name, args[1])
	}
	b, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
