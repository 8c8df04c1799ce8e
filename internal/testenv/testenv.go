// Package testenv starts the real parts that tests need (redis-server, a
// Redis Cluster of three masters with one replica each, prometheus) on free
// loopback ports in a temporary directory, and stops them when the test ends.
//
// A part that cannot be started FAILS the test with a message that names what
// is missing and how to install it; nothing here ever skips a test. The
// README's test command (`make test`) installs the Debian packages first.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// packageOf names the Debian package that ships a binary.
var packageOf = map[string]string{
	"redis-server": "redis-server",
	"redis-cli":    "redis-tools",
	"prometheus":   "prometheus",
	"promtool":     "prometheus",
}

// Binary returns the path of an executable, failing the test when it is not
// installed.
func Binary(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("testenv: %s is not installed (Debian: apt-get install -y %s, or run `make test`, which installs it): %v",
			name, packageOf[name], err)
	}
	return p
}

// handedOut are the ports FreePort returned in this process; mu guards it.
var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback TCP port that was free a moment ago and that
// it has not returned before in this process: the kernel may give a port
// just closed to the next bind, and a Redis Cluster's six nodes, picked one
// after another, once got the same port twice.
func FreePort(tb testing.TB) int {
	tb.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("testenv: no free loopback port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[p] {
			handedOut.ports[p] = true
			return p
		}
	}
	tb.Fatalf("testenv: no loopback port not handed out already in 100 tries (%d handed out)", len(handedOut.ports))
	return 0
}

// onFreePort runs start (a server on *port, waited for) and, when another
// process took the port after FreePort picked it, again (retryTaken).
func onFreePort(tb testing.TB, port *int, start func() (*Process, error)) error {
	tb.Helper()
	p, err := start()
	return retryTaken(tb, port, p, err, start)
}

// retryTaken runs start again on another port while the server it ran (p,
// which failed with err) found its port taken by another process (FreePort
// sees only this process's picks; test packages run in parallel), 3 tries
// in all. A server that finds its port taken logs "address already in
// use" and exits, or, with another server of its kind there, is told apart
// by its wait.
func retryTaken(tb testing.TB, port *int, p *Process, err error, start func() (*Process, error)) error {
	tb.Helper()
	for try := 1; err != nil && try < 3 && p != nil && portTaken(p); try++ {
		p.Kill()
		*port = FreePort(tb)
		p, err = start()
	}
	return err
}

// portTaken reports whether p's log says its port was taken.
func portTaken(p *Process) bool {
	return strings.Contains(strings.ToLower(p.Log()), "address already in use")
}

// Addr formats a loopback address for port.
func Addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// waitFor polls ready every 20 ms until it returns nil or timeout passes,
// or at once when ready reports errExited: the process it waits for is gone.
func waitFor(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if errors.Is(err, errExited) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Process is a child process started for a test.
type Process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// start launches name with args, logging to dir/logName.
func start(tb testing.TB, dir, logName, name string, args ...string) *Process {
	tb.Helper()
	p, err := startProc(dir, logName, Binary(tb, name), args...)
	if err != nil {
		tb.Fatalf("testenv: start %s: %v", name, err)
	}
	return p
}

// startProc launches the executable at path with args, logging to
// dir/logName; unlike start it may run outside the test's goroutine.
func startProc(dir, logName, path string, args ...string) (*Process, error) {
	logPath := dir + "/" + logName
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Pause stops the process with SIGSTOP and waits (up to 2 s) until the
// kernel shows it stopped: the signal is asynchronous, and a test that
// queries right after sending it could still be answered.
func (p *Process) Pause() error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.Pid())
	for i := 0; i < 2000; i++ {
		b, err := os.ReadFile(stat)
		if err != nil {
			return err
		}
		// The state follows the parenthesised command name.
		if s := string(b); strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "T") {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("testenv: process %d did not stop after SIGSTOP", p.Pid())
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Log returns what the process wrote so far (for failure messages).
func (p *Process) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
