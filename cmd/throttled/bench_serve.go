package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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
	addrs := make([]string, len(ms))
	for i := range ms {
		var err error
		if addrs[i], err = addrPlus("bench http: --serve", addr, i); err != nil {
			return err
		}
	}
	lns, lines := make([]net.Listener, 0, len(ms)), make([]servedMode, len(ms))
	srvs := make([]*http.Server, len(ms))
	defer func() { // before Serve, only these close them; a second Close is harmless
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for i, m := range ms {
		h, err := benchHandler(m, rdb, set)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", addrs[i])
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
