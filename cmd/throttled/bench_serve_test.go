package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// bench http --serve serves each mode on its own port until its context
// ends: none is the bare hello world, memory and redis decide (the rule's
// headers; Redis holds the buckets), and every port is closed after.
func TestBenchHTTPServe(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveModes(ctx, []string{"none", "memory", "redis"}, r.Client(), redisstore.Settings{}, "127.0.0.1:0", pw)
	}()
	dec := json.NewDecoder(bufio.NewReader(pr))
	urls := map[string]string{}
	for range 3 {
		var l servedMode
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		urls[l.Mode] = l.URL
	}
	for m, limited := range map[string]bool{"none": false, "memory": true, "redis": true} {
		code, body, limit := get(t, urls[m])
		if code != 200 || body != "Hello, World!" || (limit == strconv.Itoa(benchLimit)) != limited {
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

func get(t *testing.T, url string) (code int, body, limit string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-API-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get(enforce.HeaderLimit)
}

// A port already taken fails --serve with the mode named, and the modes
// that did listen are closed again: mode none at a free port, mode memory
// at the taken one next to it.
func TestBenchHTTPServePortTaken(t *testing.T) {
	taken, free := takenAfterFree(t)
	err := serveModes(context.Background(), []string{"none", "memory"}, nil, redisstore.Settings{},
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

func TestBenchHTTPServeBadAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"nonsense":        "want host:port",
		"127.0.0.1:http":  "want 0 to 65535",
		"127.0.0.1:70000": "want 0 to 65535",
	} {
		err := bench([]string{"http", "--serve", addr}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), addr) {
			t.Errorf("--serve %s: %v, want an error naming it: %s", addr, err, want)
		}
	}
	err := serveModes(context.Background(), []string{"none", "memory"}, nil, redisstore.Settings{}, "127.0.0.1:65535", io.Discard)
	if !errors.Is(err, errPortsPast) {
		t.Errorf("2 modes from port 65535: %v, want errPortsPast", err)
	}
}
