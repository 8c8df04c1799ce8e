package proxy_test

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/proxy"
)

// TestUpstreamErrorBody: a 502 or 504 says in its JSON body what failed
// (the first run of the quick start, with no upstream, got an empty 502),
// without naming the upstream's address to the client.
func TestUpstreamErrorBody(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed, _ := url.Parse("http://" + ln.Addr().String())
	ln.Close() // nothing listens there now: connection refused
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	slow, _ := url.Parse(hang.URL)
	for _, tc := range []struct {
		name     string
		upstream *url.URL
		code     int
		error    string
	}{
		{"refused", closed, http.StatusBadGateway, "upstream unreachable: connection refused"},
		{"no headers in time", slow, http.StatusGatewayTimeout, "upstream sent no response headers in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px, err := proxy.New(proxy.Settings{Upstream: tc.upstream, Pipeline: pipe(t), Timeout: 50 * time.Millisecond,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			px.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			var body struct{ Error, Reason string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != tc.code {
				t.Fatalf("%d %q (%v), want %d with a JSON body", w.Code, w.Body, err, tc.code)
			}
			if body.Error != tc.error || body.Reason != "upstream_error" || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("body %+v (%s), want error %q, reason upstream_error", body, w.Header().Get("Content-Type"), tc.error)
			}
			if strings.Contains(w.Body.String(), tc.upstream.Host) {
				t.Errorf("body %s names the upstream's address", w.Body)
			}
		})
	}
}
