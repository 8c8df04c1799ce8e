package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// servedMode is the line `bench http --serve` prints for each mode.
type servedMode struct {
	Mode string `json:"mode"`
	URL  string `json:"url"` // the hello world behind the mode's limiter
}

// serveModes serves the hello world of each mode of ms (benchHandler) on
// its own port, for a load generator outside this process (wrk:
// scripts/bench-wrk.sh): mode i on addr's port + i, or on any free port
// when addr's port is 0. It prints one servedMode per mode on w once every
// mode listens, and serves until ctx ends. A port already taken fails the
// whole call, with no mode left listening.
func serveModes(ctx context.Context, ms []string, rdb *redis.Client, set redisstore.Settings, addr string, w io.Writer) error {
	host, port, err := splitServeAddr(addr)
	if err != nil {
		return err
	}
	if port > 0 && port+len(ms)-1 > 65535 {
		return errServePorts
	}
	lns, lines := make([]net.Listener, 0, len(ms)), make([]servedMode, len(ms))
	srvs := make([]*http.Server, len(ms))
	defer func() { closeAll(lns) }() // Serve closes them too; a second Close is harmless
	for i, m := range ms {
		h, err := benchHandler(m, rdb, set)
		if err != nil {
			return err
		}
		p := 0
		if port > 0 {
			p = port + i
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("bench http: --serve: mode %s: %w", m, err)
		}
		lns = append(lns, ln)
		srvs[i] = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		lines[i] = servedMode{Mode: m, URL: "http://" + ln.Addr().String() + "/hello"}
	}
	defer func() {
		for _, s := range srvs {
			_ = s.Close()
		}
	}()
	errc := make(chan error, len(ms))
	for i, s := range srvs {
		go func() { errc <- s.Serve(lns[i]) }()
	}
	enc := json.NewEncoder(w)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return fmt.Errorf("bench http: --serve: %w", err)
	}
}

// splitServeAddr is --serve's host and first port.
func splitServeAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("bench http: --serve %q: want host:port: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bench http: --serve %q: port %q: want 0 to 65535", addr, p)
	}
	return host, port, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// errServePorts reports modes that would run past port 65535.
var errServePorts = errors.New("bench http: --serve: the modes' ports run past 65535")
