package testenv

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
)

// takenPort is a port held by a plain listener until the test ends.
func takenPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// onTakenPorts starts a server (start returns its port and whether it is
// the one answering there: nil) first on a port a plain listener holds,
// then on other's, a server of its kind, and checks that it moved to
// another port and answers as itself there.
func onTakenPorts(t *testing.T, kind string, other int, start func() (int, error)) {
	t.Helper()
	t.Cleanup(func() { firstPort = FreePort })
	for name, port := range map[string]int{"a listener": takenPort(t), "a " + kind: other} {
		firstPort = func(testing.TB) int { return port }
		got, notOurs := start()
		firstPort = FreePort
		if got == port {
			t.Fatalf("port taken by %s: the %s says it runs on it", name, kind)
		}
		if notOurs != nil {
			t.Errorf("port taken by %s: %d answers as another %s: %v", name, got, kind, notOurs)
		}
	}
}

// A fresh redis-server whose port was taken by another process after
// FreePort picked it (FreePort sees only this process's picks) starts on
// another port: taken by a plain listener, the server cannot bind and
// exits; taken by another redis-server, that one answers PING, and only
// its process_id tells it apart. Before, the first case failed the test
// and the second returned a Redis whose address was the other server's.
func TestStartRedisOnATakenPort(t *testing.T) {
	onTakenPorts(t, "redis-server", StartRedis(t).Port, func() (int, error) {
		r := StartRedis(t)
		info, err := r.Client().Info(context.Background(), "server").Result()
		if err == nil && !strings.Contains(info, "process_id:"+strconv.Itoa(r.Proc.Pid())+"\r\n") {
			err = errNotOurs
		}
		return r.Port, err
	})
}

// A cluster node whose port was taken starts on another one, and the
// cluster comes up whole.
func TestStartClusterOnATakenPort(t *testing.T) {
	taken, calls := takenPort(t), 0
	firstPort = func(tb testing.TB) int {
		if calls++; calls == 2 { // the second node's
			return taken
		}
		return FreePort(tb)
	}
	defer func() { firstPort = FreePort }()
	cl := StartCluster(t)
	seen := map[int]bool{}
	for _, n := range append(cl.Masters[:len(cl.Masters):len(cl.Masters)], cl.Replicas...) {
		if n.Port == taken || seen[n.Port] {
			t.Fatalf("node on port %d: taken (%d) or twice", n.Port, taken)
		}
		seen[n.Port] = true
	}
	if err := cl.ready(); err != nil {
		t.Fatal(err)
	}
}

// A prometheus whose port was taken, by a plain listener or by another
// prometheus (which answers /-/ready too), starts on another port and is
// the one answering there.
func TestStartPrometheusOnATakenPort(t *testing.T) {
	onTakenPorts(t, "prometheus", StartPrometheus(t).Port, func() (int, error) {
		p := StartPrometheus(t)
		return p.Port, p.wait()
	})
}
