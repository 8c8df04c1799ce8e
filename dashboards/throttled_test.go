package dashboards

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// built is the throttled binary, built once per test run (TestMain removes
// its directory). The live tests run it rather than throttled.New in this
// process: they judge the latency alerts (ThrottledLimiterLatencyHigh must
// stay quiet on a healthy store), and under the race detector a decision
// takes several times as long as in production.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// throttledBinary builds ./cmd/throttled with the go tool.
func throttledBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the go tool is not on PATH: %w", err)
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "throttled-dashboards-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "throttled")
		cmd := exec.Command(goTool, "build", "-o", built.path, "./cmd/throttled")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/throttled: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// cleanEnv is the environment without THROTTLED_* overrides, so the
// configs under test are read as written.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THROTTLED_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestComposeThrottledConfigChecks runs the configuration check that
// `throttled config check` runs (config.LoadChecked) on the
// config docker-compose.yml mounts, and on a copy with a misspelt key to
// show the check can fail.
func TestComposeThrottledConfigChecks(t *testing.T) {
	check := func(path string) (string, error) {
		_, warnings, err := config.LoadChecked(path, nil, nil)
		return fmt.Sprint(warnings), err
	}
	if out, err := check(throttledConf); err != nil {
		t.Fatalf("throttled config check %s: %v\n%s", throttledConf, err, out)
	}
	src, err := os.ReadFile(throttledConf)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "config.yaml")
	src = bytes.Replace(src, []byte("\nupstream:"), []byte("\nupstreams:"), 1)
	if err := os.WriteFile(bad, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := check(bad); err == nil {
		t.Fatalf("throttled config check accepted an unknown key:\n%s", out)
	}
}

// instance is a running `throttled serve`.
type instance struct {
	proxy, admin string // http://127.0.0.1:PORT
	adminAddr    string // 127.0.0.1:PORT, the scrape target
	logPath      string
}

func (in *instance) log() string {
	b, err := os.ReadFile(in.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// liveConfig is the minimal config of the README quick start (without
// redis: the in-memory store and in-process signals) on loopback ports in
// front of upstream, with the admin token tok, followed by extra.
func liveConfig(proxyPort, adminPort int, upstream, tok, extra string) string {
	return fmt.Sprintf(`listen: %s
upstream: %s
admin:
  listen: %s
  tokens:
    write: %s
tiers:
  free:    { rate: 10,  period: 1s, burst: 10,  priority: 1 }
  premium: { rate: 100, period: 1s, burst: 100, priority: 0 }
rules:
  - name: per-key
    match: { path: / }
    key: header:X-API-Key
  - name: per-ip
    match: { path: / }
    key: ip
controller:
  period: 1s
%s`, testenv.Addr(proxyPort), upstream, testenv.Addr(adminPort), tok, extra)
}

// adminToken is the live tests' write token. The quick start's
// "change-me" is tested on its own (TestQuickStartConfigServes) so that a
// token rule does not hide what the PromQL tests check.
const adminToken = "change-me-0123456789"

// startThrottled runs `throttled serve --config F` in front of upstream
// (liveConfig with extra) and waits until its admin /readyz answers 200;
// SIGTERM (then SIGKILL) at the end of the test.
func startThrottled(t *testing.T, upstream, extra string) *instance {
	t.Helper()
	return startThrottledWith(t, func(proxyPort, adminPort int) string {
		return liveConfig(proxyPort, adminPort, upstream, adminToken, extra)
	})
}

// startThrottledWith runs serve on the config render returns for two free
// ports.
func startThrottledWith(t *testing.T, render func(proxyPort, adminPort int) string) *instance {
	t.Helper()
	bin := throttledBinary(t)
	dir := t.TempDir()
	proxyPort, adminPort := testenv.FreePort(t), testenv.FreePort(t)
	in := &instance{proxy: "http://" + testenv.Addr(proxyPort), admin: "http://" + testenv.Addr(adminPort),
		adminAddr: testenv.Addr(adminPort), logPath: filepath.Join(dir, "throttled.log")}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(render(proxyPort, adminPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(in.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env, cmd.Stdout, cmd.Stderr = cleanEnv(), logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start throttled serve: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() { stop(t, cmd.Process, done) })
	waitReady(t, in, done)
	return in
}

// TestQuickStartConfigServes starts serve on the minimal config as
// written (token "change-me"; loopback ports of the test's choosing, no
// redis) and assigns a key with that token.
func TestQuickStartConfigServes(t *testing.T) {
	up := upstream(t)
	in := startThrottledWith(t, func(proxyPort, adminPort int) string {
		return liveConfig(proxyPort, adminPort, up.URL, "change-me", "")
	})
	adminPutAs(t, in, "change-me", "/v1/keys/k1", `{"tier": "free"}`)
}

func stop(t *testing.T, p *os.Process, done <-chan struct{}) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Errorf("throttled serve did not exit within 15s of SIGTERM; killing it")
		_ = p.Kill()
		<-done
	}
}

func waitReady(t *testing.T, in *instance, exited <-chan struct{}) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("throttled serve exited before it was ready:\n%s", in.log())
		default:
		}
		resp, err := c.Get(in.admin + "/readyz")
		if err != nil {
			last = err.Error()
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = resp.Status
	}
	t.Fatalf("throttled serve: %s/readyz not 200 within 30s (last: %s):\n%s", in.admin, last, in.log())
}

// assign puts key in tier through the admin API.
func assign(t *testing.T, in *instance, key, tier string) {
	t.Helper()
	adminPut(t, in, "/v1/keys/"+key, `{"tier": "`+tier+`"}`)
}

// pin fixes tier's multiplier through the admin API for ten minutes.
func pin(t *testing.T, in *instance, tier string, m float64) {
	t.Helper()
	adminPut(t, in, "/v1/multipliers/"+tier+"/pin", fmt.Sprintf(`{"multiplier": %g, "ttl": "10m"}`, m))
}

// adminPut writes a new resource through the admin API (no If-Match: the
// test creates each one once).
func adminPut(t *testing.T, in *instance, path, body string) {
	t.Helper()
	adminPutAs(t, in, adminToken, path, body)
}

func adminPutAs(t *testing.T, in *instance, token, path, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, in.admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("PUT %s: %s %s", path, resp.Status, b.String())
	}
}

// client is one API key sending requests through the proxy.
type client struct {
	key   string
	burst int // requests per 100 ms tick
}

// codes counts responses by status code.
type codes struct {
	mu sync.Mutex
	n  map[int]int
}

func (c *codes) add(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[int]int{}
	}
	c.n[code]++
}

func (c *codes) get(code int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[code]
}

func (c *codes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.n)
}

// drive sends each client's burst through the proxy every 100 ms until ctx
// ends, for at most maxTicks ticks; errs counts transport errors.
func drive(ctx context.Context, proxy string, clients []client, maxTicks int, got *codes, errs *atomic.Int64) {
	hc := &http.Client{Timeout: 2 * time.Second}
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for range maxTicks {
				for range cl.burst {
					send(ctx, hc, proxy, cl.key, got, errs)
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	wg.Wait()
}

func send(ctx context.Context, hc *http.Client, proxy, key string, got *codes, errs *atomic.Int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxy+"/", nil)
	if err != nil {
		errs.Add(1)
		return
	}
	req.Header.Set("X-API-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			errs.Add(1)
		}
		return
	}
	resp.Body.Close()
	got.add(resp.StatusCode)
}
