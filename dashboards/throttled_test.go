package dashboards

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

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
	logs         testenv.SyncBuffer
}

func (in *instance) log() string {
	b := in.logs.String()
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

// startThrottled runs a throttled (throttled.New, its admin handler and
// proxy on loopback listeners) in front of upstream (liveConfig with
// extra) and waits until its admin /readyz answers 200; it stops at the
// end of the test.
func startThrottled(t *testing.T, upstream, extra string) *instance {
	t.Helper()
	return startThrottledWith(t, func(proxyPort, adminPort int) string {
		return liveConfig(proxyPort, adminPort, upstream, adminToken, extra)
	})
}

// startThrottledWith runs throttled on the config render returns for two
// free ports.
func startThrottledWith(t *testing.T, render func(proxyPort, adminPort int) string) *instance {
	t.Helper()
	proxyPort, adminPort := testenv.FreePort(t), testenv.FreePort(t)
	in := &instance{proxy: "http://" + testenv.Addr(proxyPort), admin: "http://" + testenv.Addr(adminPort),
		adminAddr: testenv.Addr(adminPort)}
	cfg, err := config.Parse([]byte(render(proxyPort, adminPort)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th, err := throttled.New(ctx, cfg, throttled.Options{Logger: slog.New(slog.NewJSONHandler(&in.logs, nil))})
	if err != nil {
		t.Fatalf("throttled.New: %v", err)
	}
	proxy, err := th.Proxy()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = th.Run(ctx) }()
	for _, l := range []struct {
		addr string
		h    http.Handler
	}{{cfg.Admin.Listen, th.AdminHandler()}, {cfg.Listen, proxy}} {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: l.h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	t.Cleanup(func() { cancel(); <-done; _ = th.Close() })
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

func waitReady(t *testing.T, in *instance, exited <-chan struct{}) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("throttled stopped before it was ready:\n%s", in.log())
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
	t.Fatalf("throttled: %s/readyz not 200 within 30s (last: %s):\n%s", in.admin, last, in.log())
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
	burstsEvery(ctx, clients, maxTicks, func(cl client) { send(ctx, hc, proxy, cl.key, got, errs) })
}

// burstsEvery calls one for each request of each client's burst, every
// 100 ms, ticks times or until ctx ends; the clients run at once.
func burstsEvery(ctx context.Context, clients []client, ticks int, one func(client)) {
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for range ticks {
				for range cl.burst {
					one(cl)
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
