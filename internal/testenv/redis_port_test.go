package testenv

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
)

// A fresh redis-server whose port was taken by another process after
// FreePort picked it (FreePort sees only this process's picks) starts on
// another port: taken by a plain listener, the server cannot bind and
// exits; taken by another redis-server, that one answers PING, and only
// its process_id tells it apart. Before, the first case failed the test
// and the second returned a Redis whose address was the other server's.
func TestStartRedisOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other := StartRedis(t)
	for name, port := range map[string]int{
		"a listener":     ln.Addr().(*net.TCPAddr).Port,
		"a redis-server": other.Port,
	} {
		firstPort = func(testing.TB) int { return port }
		r := StartRedis(t)
		firstPort = FreePort
		if r.Port == port {
			t.Fatalf("port taken by %s: the server says it runs on it", name)
		}
		info, err := r.Client().Info(context.Background(), "server").Result()
		if err != nil || !strings.Contains(info, "process_id:"+strconv.Itoa(r.Proc.Pid())+"\r\n") {
			t.Errorf("port taken by %s: %s answers as another process (%v)", name, r.Addr(), err)
		}
	}
}

// A cluster node whose port was taken starts on another one, and the
// cluster comes up whole.
func TestStartClusterOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken, calls := ln.Addr().(*net.TCPAddr).Port, 0
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other := StartPrometheus(t)
	for name, port := range map[string]int{
		"a listener":   ln.Addr().(*net.TCPAddr).Port,
		"a prometheus": other.Port,
	} {
		firstPort = func(testing.TB) int { return port }
		p := StartPrometheus(t)
		firstPort = FreePort
		if p.Port == port {
			t.Fatalf("port taken by %s: prometheus says it runs on it", name)
		}
		if err := p.wait(); err != nil {
			t.Errorf("port taken by %s: %s is not this prometheus: %v", name, p.Addr(), err)
		}
	}
}
