package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// runMainEnv makes the test binary run `throttled` itself (TestMain), so
// that tests can send a real serve process real signals.
const runMainEnv = "THROTTLED_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// serveProc is `throttled serve` running as a child process.
type serveProc struct {
	cmd   *exec.Cmd
	log   *testenv.SyncBuffer
	addrs map[string]string
	done  chan error // its exit
}

// startServeProc runs `throttled serve --config path` as a child process
// and waits for it to serve; it is killed when the test ends.
func startServeProc(t *testing.T, path string) *serveProc {
	t.Helper()
	p := &serveProc{log: &testenv.SyncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "serve", "--config", path)
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	testenv.WaitFor(t, 30*time.Second, "serve to log its addresses", func() bool {
		line := testenv.GrepLines(p.log.String(), `"msg":"throttled serving"`)
		var l struct{ Addrs map[string]string }
		if line == "" || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &l) != nil {
			return false
		}
		p.addrs = l.Addrs
		return true
	})
	return p
}

// exited is the child's exit status, or -1 while it runs.
func (p *serveProc) exited() int {
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 0
	default:
		return -1
	}
}

// SIGHUP reloads the file instead of ending serve with status 129: with
// config.source: file a changed tier rate is in force after it, serve
// still runs, and one warning names the changed listen address, which
// needs a restart.
func TestServeSIGHUPReloads(t *testing.T) {
	rd := testenv.StartRedis(t)
	src := testenv.ServeConfig(testenv.Upstream(t).URL, rd.URL()) + "config:\n  source: file\n"
	path := testenv.WriteFile(t, src)
	p := startServeProc(t, path)
	admin := "http://" + p.addrs["admin"]
	next := strings.Replace(src, "free:    { rate: 5,", "free:    { rate: 7,", 1)
	next = strings.Replace(next, "listen: 127.0.0.1:0\nupstream", "listen: 127.0.0.1:1\nupstream", 1)
	if err := os.WriteFile(path, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 15*time.Second, "free's rate 7 through the admin API", func() bool {
		if code := p.exited(); code >= 0 {
			t.Fatalf("serve exited with status %d on SIGHUP:\n%s", code, p.log.String())
		}
		_, body := testenv.Call(t, "GET", admin+"/v1/tiers/free", "", "Authorization", "Bearer "+testenv.WriteToken)
		return strings.Contains(body, `"rate":7`)
	})
	warn := testenv.GrepLines(p.log.String(), "take effect only at restart")
	if strings.Count(warn, "take effect only at restart") != 1 || !strings.Contains(warn, `"listen"`) {
		t.Fatalf("restart-only warnings:\n%s\nwant one naming listen; log:\n%s", warn, p.log.String())
	}
}

// With shutdown_delay, SIGTERM fails /readyz at once while the proxy
// still serves for the delay; then serve drains and exits 0, not before
// the delay.
func TestServeShutdownDelay(t *testing.T) {
	const delay = 3 * time.Second
	src := testenv.ServeConfig(testenv.Upstream(t).URL, "") + "shutdown_delay: 3s\n"
	p := startServeProc(t, testenv.WriteFile(t, src))
	admin, proxy := "http://"+p.addrs["admin"], "http://"+p.addrs["proxy"]
	if resp, _ := testenv.Call(t, "GET", admin+"/readyz", ""); resp.StatusCode != 200 {
		t.Fatalf("/readyz before SIGTERM: %d", resp.StatusCode)
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 2*time.Second, "/readyz to fail after SIGTERM", func() bool {
		resp, _ := testenv.Call(t, "GET", admin+"/readyz", "")
		return resp.StatusCode == 503
	})
	if resp, body := testenv.Call(t, "GET", proxy+"/x", "", "X-API-Key", "k1"); resp.StatusCode != 200 {
		t.Fatalf("proxy during shutdown_delay: %d %s, want 200", resp.StatusCode, body)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM, want status 0:\n%s", err, p.log.String())
		}
	case <-time.After(delay + 20*time.Second):
		t.Fatal("serve did not exit within shutdown_delay + 20s")
	}
	if took := time.Since(sent); took < delay {
		t.Fatalf("serve exited %v after SIGTERM, before shutdown_delay %v", took, delay)
	}
}
