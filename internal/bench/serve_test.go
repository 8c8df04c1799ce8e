package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// bench http --serve (ServeModes) serves each mode on its own port until
// its context ends: none is the bare hello world, memory and redis decide (the rule's
// headers; Redis holds the buckets), and every port is closed after.
func TestBenchHTTPServe(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeModes(ctx, HTTPSettings{Modes: []string{"none", "memory", "redis"}, Redis: r.Client()}, "127.0.0.1:0", pw)
	}()
	dec := json.NewDecoder(bufio.NewReader(pr))
	urls := map[string]string{}
	for range 3 {
		var l ServedMode
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		urls[l.Mode] = l.URL
	}
	for m, limited := range map[string]bool{"none": false, "memory": true, "redis": true} {
		resp, body := testenv.Call(t, "GET", urls[m], "", "X-API-Key", "k1")
		code, limit := resp.StatusCode, resp.Header.Get(enforce.HeaderLimit)
		if code != 200 || body != "Hello, World!" || (limit == strconv.Itoa(Limit)) != limited {
			t.Errorf("%s at %s: %d %q, X-RateLimit-Limit %q; want 200 Hello, World! with the limit header %v",
				m, urls[m], code, body, limit, limited)
		}
	}
	if n, err := r.Client().DBSize(ctx).Result(); err != nil || n == 0 {
		t.Errorf("redis holds %d keys (%v) after mode redis answered: want its bucket", n, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serveModes after cancel: %v, want nil", err)
	}
	for m, u := range urls {
		if c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/hello")); err == nil {
			c.Close()
			t.Errorf("mode %s still listens at %s after the context ended", m, u)
		}
	}
}

// A port already taken fails --serve with the mode named, and the modes
// that did listen are closed again: mode none at a free port, mode memory
// at the taken one next to it.
func TestBenchHTTPServePortTaken(t *testing.T) {
	taken, free := takenAfterFree(t)
	err := ServeModes(context.Background(), HTTPSettings{Modes: []string{"none", "memory"}},
		"127.0.0.1:"+strconv.Itoa(free), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "mode memory") {
		t.Fatalf("err = %v, want mode memory's port named taken", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(free))
	if err != nil {
		t.Fatalf("mode none's port %d still in use after the failure: %v", free, err)
	}
	ln.Close()
	taken.Close()
}

// takenAfterFree listens on a port whose predecessor is free.
func takenAfterFree(t *testing.T) (net.Listener, int) {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		if prev, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p-1)); err == nil {
			prev.Close()
			return ln, p - 1
		}
		ln.Close()
	}
	t.Fatal("no free port next to a free one in 50 tries")
	return nil, 0
}

// AddrPlus counts ports up from the base (port 0: free ports, the base
// itself) and refuses, naming the flag and the base, an address that is
// not host:port, a port out of range, and ports past 65535.
func TestAddrPlus(t *testing.T) {
	for _, tc := range []struct {
		base string
		i    int
		want string // the address, or what the error says
	}{
		{"127.0.0.1:9100", 2, "127.0.0.1:9102"},
		{"[::1]:0", 5, "[::1]:0"},
		{"nonsense", 0, "--serve \"nonsense\": want host:port"},
		{"127.0.0.1:http", 0, `port "http": want 0 to 65535`},
		{"127.0.0.1:70000", 0, `port "70000": want 0 to 65535`},
		{"127.0.0.1:65535", 1, "the ports run past 65535"},
	} {
		got, err := AddrPlus("--serve", tc.base, tc.i)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("AddrPlus(%q, %d) = %q, want %q", tc.base, tc.i, got, tc.want)
		}
	}
	// Two modes from port 65535: the second runs past it.
	err := ServeModes(context.Background(), HTTPSettings{Modes: []string{"none", "memory"}}, "127.0.0.1:65535", io.Discard)
	if !errors.Is(err, ErrPortsPast) {
		t.Errorf("2 modes from port 65535: %v, want ErrPortsPast", err)
	}
}
