package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestHealthcheckServe: `throttled healthcheck` exits 0 against a running
// serve's /readyz and /healthz, and 1 against a probe that answers 503, a
// port where nothing listens and a path that is not a probe.
func TestHealthcheckServe(t *testing.T) {
	up := testenv.Upstream(t)
	admin := "http://" + startServe(t, configtest.Serve(t, up.URL, ""))["admin"]
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/readyz"
	ln.Close()
	for _, tc := range []struct {
		url  string
		want int
	}{
		{admin + "/readyz", 0},
		{admin + "/healthz", 0},
		{down.URL + "/readyz", 1},
		{closed, 1},
		{admin + "/v1/tiers", 1}, // 401 without a token: not a probe
	} {
		var out, errOut bytes.Buffer
		if got := run([]string{"healthcheck", "--url", tc.url, "--timeout", "2s"}, &out, &errOut); got != tc.want {
			t.Errorf("healthcheck --url %s: exit %d, want %d (stdout %q, stderr %q)", tc.url, got, tc.want, out.String(), errOut.String())
		}
	}
}

// TestHealthcheckFlags: bad flags and arguments exit 1 with a message that
// names them.
func TestHealthcheckFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "127.0.0.1:9090/readyz"}, "--url"},
		{[]string{"--timeout", "0s"}, "--timeout"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"healthcheck"}, tc.args...), &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("healthcheck %q: exit %d, stderr %q; want 1 naming %s", tc.args, code, errOut.String(), tc.want)
		}
	}
}
