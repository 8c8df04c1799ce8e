package promserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled/internal/childproc"
)

// Errors.
var (
	// ErrSettings reports settings Start cannot use.
	ErrSettings = errors.New("promserver: invalid settings")
	// ErrNotReady reports a server that did not become ready, or whose
	// targets were not all up, in time.
	ErrNotReady = errors.New("promserver: not ready")
)

// Defaults of Settings.
const (
	DefaultJob      = "throttled"
	DefaultInterval = time.Second
	DefaultBinary   = "prometheus"
	DefaultReady    = 30 * time.Second
)

// Settings say what the server scrapes. Zero values mean the defaults.
type Settings struct {
	// Targets are host:port addresses (or http://host:port URLs) scraped
	// at /metrics. Required.
	Targets []string
	// Job is the scrape job's name (the job label); DefaultJob if empty.
	Job string
	// Interval is the scrape and rule evaluation interval; DefaultInterval
	// if 0.
	Interval time.Duration
	// Binary is the prometheus executable; DefaultBinary (from PATH) if empty.
	Binary string
	// Ready bounds the wait for the server and its targets; DefaultReady if 0.
	Ready time.Duration
}

func (s Settings) withDefaults() Settings {
	if s.Job == "" {
		s.Job = DefaultJob
	}
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	if s.Binary == "" {
		s.Binary = DefaultBinary
	}
	if s.Ready <= 0 {
		s.Ready = DefaultReady
	}
	return s
}

// Config renders prometheus.yml for targets (host:port), scraped every
// interval as job, evaluating ruleFiles (absolute paths) as often. Targets,
// names and paths are quoted as YAML strings (JSON strings are valid YAML).
func Config(job string, interval time.Duration, targets []string, ruleFiles ...string) string {
	var b strings.Builder
	iv := model.Duration(interval).String()
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", iv, iv)
	if len(ruleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for _, f := range ruleFiles {
			fmt.Fprintf(&b, "  - %s\n", strconv.Quote(f))
		}
	}
	fmt.Fprintf(&b, "scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets: [", strconv.Quote(job))
	for i, t := range targets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(t))
	}
	b.WriteString("]\n")
	return b.String()
}

// Server is a running prometheus and its temporary directory.
type Server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// FreeAddr is a loopback host:port that was free a moment ago: a server
// whose URL must be known before it starts (a stack configured with it)
// reserves it here, then passes it to Start.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Start runs prometheus on addr (host:port; "" for a free one) scraping
// s.Targets, and returns once it is ready and every target is up. The
// caller must Stop it.
func Start(ctx context.Context, addr string, s Settings) (*Server, error) {
	if len(s.Targets) == 0 {
		return nil, fmt.Errorf("%w: no Targets", ErrSettings)
	}
	s = s.withDefaults()
	targets := make([]string, len(s.Targets))
	for i, t := range s.Targets {
		targets[i] = strings.TrimPrefix(strings.TrimPrefix(t, "http://"), "https://")
	}
	if addr == "" {
		var err error
		if addr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "throttled-prometheus-")
	if err != nil {
		return nil, err
	}
	p := &Server{addr: addr, dir: dir, done: make(chan struct{})}
	if err := p.launch(s, targets); err != nil {
		p.Stop()
		return nil, err
	}
	if err := p.wait(ctx, s.Ready, len(targets)); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
		p.Stop()
		return nil, fmt.Errorf("%w: prometheus on %s: %w\n%s", ErrNotReady, addr, err, tail(log, 2000))
	}
	return p, nil
}

// launch writes the configuration and starts the process.
func (p *Server) launch(s Settings, targets []string) error {
	cfg := filepath.Join(p.dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(Config(s.Job, s.Interval, targets)), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(p.dir, "prometheus.log"))
	if err != nil {
		return err
	}
	p.cmd = childproc.Command(s.Binary, "--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"), "--web.listen-address="+p.addr)
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = p.dir, logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		p.cmd = nil
		return fmt.Errorf("promserver: start %s (Debian: apt-get install prometheus): %w", s.Binary, err)
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	return nil
}

// URL is the base URL of the server's HTTP API.
func (p *Server) URL() string { return "http://" + p.addr }

// Stop kills the server, waits for it and removes its directory.
func (p *Server) Stop() {
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.cmd = nil
	}
	_ = os.RemoveAll(p.dir)
}

// wait polls until the server answers as itself (another process on the
// port answers with another config file) and n targets are up.
func (p *Server) wait(ctx context.Context, limit time.Duration, n int) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	last := errors.New("no answer yet")
	for {
		select {
		case <-p.done:
			return errors.New("prometheus exited")
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", limit, last)
		case <-time.After(200 * time.Millisecond):
		}
		if last = p.ready(c, n); last == nil {
			return nil
		}
	}
}

// ready checks the server's identity and its targets' health.
func (p *Server) ready(c *http.Client, n int) error {
	var flags struct {
		Data map[string]string `json:"data"`
	}
	if err := p.get(c, "/api/v1/status/flags", &flags); err != nil {
		return err
	}
	if f := flags.Data["config.file"]; f != filepath.Join(p.dir, "prometheus.yml") {
		return fmt.Errorf("another prometheus answers on %s (config.file %q)", p.addr, f)
	}
	var ts struct {
		Data struct {
			Active []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := p.get(c, "/api/v1/targets", &ts); err != nil {
		return err
	}
	up := 0
	for _, t := range ts.Data.Active {
		if t.Health == "up" {
			up++
		}
	}
	if up < n {
		return fmt.Errorf("%d of %d targets up", up, n)
	}
	return nil
}

func (p *Server) get(c *http.Client, path string, v any) error { return GetJSON(c, p.URL(), path, v) }

// GetJSON GETs path from the Prometheus server at base and decodes its
// JSON body into v (unless nil); a status other than 200 is an error
// naming path.
func GetJSON(c *http.Client, base, path string, v any) error {
	resp, err := c.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
