package bench

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
)

// ServedMode is the line `bench http --serve` prints for each mode.
type ServedMode struct {
	Mode string `json:"mode"`
	URL  string `json:"url"` // the hello world behind the mode's limiter
}

// ServeModes serves the hello world of each mode of s.Modes (Handler) on
// its own port, for a load generator outside this process (wrk:
// scripts/bench-wrk.sh): mode i on addr's port + i, or on any free port
// when addr's port is 0. It prints one ServedMode per mode on w once every
// mode listens, and serves until ctx ends. A port already taken fails the
// whole call, with no mode left listening.
func ServeModes(ctx context.Context, s HTTPSettings, addr string, w io.Writer) error {
	srvs, lns, lines, err := listenModes(s, addr)
	defer func() {
		for _, srv := range srvs {
			_ = srv.Close()
		}
	}()
	if err != nil {
		for _, ln := range lns { // not served yet: only these close them
			_ = ln.Close()
		}
		return err
	}
	errc := make(chan error, len(srvs))
	for i, srv := range srvs {
		go func() { errc <- srv.Serve(lns[i]) }()
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

// listenModes binds each mode's listener (AddrPlus of addr) and makes its
// server; with an error come the listeners bound so far, to close.
func listenModes(s HTTPSettings, addr string) ([]*http.Server, []net.Listener, []ServedMode, error) {
	addrs := make([]string, len(s.Modes))
	for i := range s.Modes { // every address is checked before any binds
		var err error
		if addrs[i], err = AddrPlus("bench http: --serve", addr, i); err != nil {
			return nil, nil, nil, err
		}
	}
	var srvs []*http.Server
	var lns []net.Listener
	var lines []ServedMode
	for i, m := range s.Modes {
		h, err := Handler(m, s.Redis, s.Store)
		if err != nil {
			return nil, lns, nil, err
		}
		ln, err := net.Listen("tcp", addrs[i])
		if err != nil {
			return nil, lns, nil, fmt.Errorf("bench http: --serve: mode %s: %w", m, err)
		}
		lns = append(lns, ln)
		srvs = append(srvs, &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second})
		lines = append(lines, ServedMode{Mode: m, URL: "http://" + ln.Addr().String() + "/hello"})
	}
	return srvs, lns, lines, nil
}

// ErrPortsPast reports a base port whose +i runs past 65535 (wrapped in an
// error that names the flag).
var ErrPortsPast = errors.New("the ports run past 65535")

// AddrPlus is the i-th of consecutive listen addresses from base: base's
// host and port + i, or base itself when its port is 0 (a free port for
// each). flag names base in errors.
func AddrPlus(flag, base string, i int) (string, error) {
	host, port, err := net.SplitHostPort(base)
	if err != nil {
		return "", fmt.Errorf("%s %q: want host:port: %w", flag, base, err)
	}
	p, err := strconv.Atoi(port)
	switch {
	case err != nil || p < 0 || p > 65535:
		return "", fmt.Errorf("%s %q: port %q: want 0 to 65535", flag, base, port)
	case p == 0:
		return base, nil
	case p+i > 65535:
		return "", fmt.Errorf("%s %q: %w", flag, base, ErrPortsPast)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i)), nil
}
