package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled/internal/promserver"
)

// DefaultJob is the scrape job name StartPrometheus gives its targets.
const DefaultJob = "throttled"

// PrometheusConfig says what a test Prometheus scrapes and evaluates. Zero
// values mean the defaults.
type PrometheusConfig struct {
	// Targets are host:port addresses scraped at /metrics.
	Targets []string
	// Job is the scrape job name (the `job` label); DefaultJob when empty.
	Job string
	// RuleFiles are recording/alerting rule files, loaded as given (relative
	// paths are taken from the test's working directory).
	RuleFiles []string
	// Interval is both the scrape and the rule evaluation interval; 1s when 0.
	Interval time.Duration
}

// Prometheus is a prometheus server started for one test.
type Prometheus struct {
	tb   testing.TB
	dir  string
	cfg  PrometheusConfig
	Port int
	Proc *Process
}

// StartPrometheus starts prometheus on a free loopback port scraping targets
// (host:port, path /metrics) every second as job "throttled", waits until it
// is ready and stops it when the test ends.
func StartPrometheus(tb testing.TB, targets ...string) *Prometheus {
	tb.Helper()
	return StartPrometheusWith(tb, PrometheusConfig{Targets: targets})
}

// StartPrometheusWith is StartPrometheus with a job name, rule files or a
// scrape interval of the test's choosing.
func StartPrometheusWith(tb testing.TB, cfg PrometheusConfig) *Prometheus {
	tb.Helper()
	if cfg.Job == "" {
		cfg.Job = DefaultJob
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	p := &Prometheus{tb: tb, dir: tb.TempDir(), cfg: cfg, Port: firstPort(tb)}
	if err := os.WriteFile(p.configPath(), []byte(p.config()), 0o644); err != nil {
		tb.Fatalf("testenv: write prometheus config: %v", err)
	}
	err := onFreePort(tb, &p.Port, func() (*Process, error) {
		p.Proc = p.launch()
		return p.Proc, p.wait()
	})
	if err != nil {
		tb.Fatalf("testenv: prometheus on %s did not become ready: %v\n%s", p.Addr(), err, p.Proc.Log())
	}
	tb.Cleanup(p.Stop)
	return p
}

func (p *Prometheus) configPath() string { return filepath.Join(p.dir, "prometheus.yml") }

// config renders prometheus.yml (promserver.Config) with the rule files'
// absolute paths.
func (p *Prometheus) config() string {
	rules := make([]string, len(p.cfg.RuleFiles))
	for i, f := range p.cfg.RuleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			p.tb.Fatalf("testenv: rule file %q: %v", f, err)
		}
		rules[i] = abs
	}
	return promserver.Config(p.cfg.Job, p.cfg.Interval, p.cfg.Targets, rules...)
}

// Addr is host:port of the server.
func (p *Prometheus) Addr() string { return Addr(p.Port) }

// URL is the base URL of the server's HTTP API, e.g. http://127.0.0.1:9090.
func (p *Prometheus) URL() string { return "http://" + p.Addr() }

// Job is the scrape job name of the targets.
func (p *Prometheus) Job() string { return p.cfg.Job }

// Start (re)starts the server on its port with the same storage, as after
// Kill, and waits until /-/ready answers 200.
func (p *Prometheus) Start() {
	p.tb.Helper()
	p.Proc = p.launch()
	if err := p.wait(); err != nil {
		p.tb.Fatalf("testenv: prometheus on %s did not become ready: %v\n%s", p.Addr(), err, p.Proc.Log())
	}
}

// launch starts the prometheus process of p on p.Port.
func (p *Prometheus) launch() *Process {
	p.tb.Helper()
	return start(p.tb, p.dir, "prometheus.log", "prometheus",
		"--config.file="+p.configPath(),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		"--web.listen-address="+p.Addr())
}

// wait waits (up to 30 s) until p's own server is ready: another test's
// prometheus on the port answers /-/ready too, but with another
// config.file among its flags.
func (p *Prometheus) wait() error {
	c := &http.Client{Timeout: time.Second}
	return waitFor(30*time.Second, func() error {
		if p.Proc.Exited() {
			return errExited
		}
		if err := p.get(c, "/-/ready", nil); err != nil {
			return err
		}
		var flags struct {
			Data map[string]string `json:"data"`
		}
		if err := p.get(c, "/api/v1/status/flags", &flags); err != nil {
			return err
		}
		if f := flags.Data["config.file"]; f != p.configPath() {
			return fmt.Errorf("another prometheus answers on the port (config.file %q)", f)
		}
		return nil
	})
}

// get GETs path from p and decodes its JSON body into v (unless nil).
func (p *Prometheus) get(c *http.Client, path string, v any) error {
	return promserver.GetJSON(c, p.URL(), path, v)
}

// API returns a client of the server's HTTP API.
func (p *Prometheus) API() v1.API {
	p.tb.Helper()
	c, err := api.NewClient(api.Config{Address: p.URL()})
	if err != nil {
		p.tb.Fatalf("testenv: prometheus client: %v", err)
	}
	return v1.NewAPI(c)
}

// errNoData is what WaitForSeries reports while a query answers nothing.
var errNoData = errors.New("query returned no data")

// WaitForSeries polls query until it returns a non-empty vector (or a
// scalar) and returns that vector; it fails the test after timeout.
func (p *Prometheus) WaitForSeries(tb testing.TB, query string, timeout time.Duration) model.Vector {
	tb.Helper()
	a := p.API()
	var got model.Vector
	err := waitFor(timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, _, _, err := a.Query(ctx, query, time.Time{})
		if err != nil {
			return err
		}
		switch v := v.(type) {
		case model.Vector:
			got = v
		case *model.Scalar:
			got = model.Vector{{Value: v.Value, Timestamp: v.Timestamp}}
		default:
			return fmt.Errorf("query returned a %s, want a vector", v.Type())
		}
		if len(got) == 0 {
			return errNoData
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("testenv: prometheus query %q: no series after %s: %v\n%s", query, timeout, err, p.Proc.Log())
	}
	return got
}

// Kill sends SIGKILL to the server and waits for it to exit.
func (p *Prometheus) Kill() { p.Proc.Kill() }

// Pause stops the server process (SIGSTOP): connections are accepted by the
// kernel but nothing answers until Resume.
func (p *Prometheus) Pause() {
	if err := p.Proc.Pause(); err != nil {
		p.tb.Fatalf("testenv: pause prometheus: %v", err)
	}
}

// Resume continues a paused server (SIGCONT).
func (p *Prometheus) Resume() { _ = p.Proc.Signal(syscall.SIGCONT) }

// Stop ends the server if it still runs.
func (p *Prometheus) Stop() {
	if p.Proc != nil && !p.Proc.Exited() {
		p.Resume()
		p.Proc.Kill()
	}
}
