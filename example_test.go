package throttled_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
)

// A Go service embeds throttled: a configuration (here inline; usually
// config.Load of a file), New, and Middleware around the service's handler.
// The free tier's key gets 3 requests at once, then 429.
func Example() {
	cfg, err := config.Parse([]byte(`
admin: { listen: "127.0.0.1:0", tokens: { write: example-token-0123456789abcdef } }
tiers:
  free: { rate: 3, period: 1m, burst: 3, priority: 1 }
default_tier: free
rules:
  - { name: per-key, match: { path: /api/ }, key: "header:X-API-Key" }
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	t, err := throttled.New(ctx, cfg, throttled.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	srv := httptest.NewServer(t.Middleware(app))
	defer srv.Close()
	for range 4 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/hello", nil)
		req.Header.Set("X-API-Key", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"))
	}
	// Output:
	// 200 2
	// 200 1
	// 200 0
	// 429 0
}

// The sidecar: a configuration with an upstream makes Proxy the reverse
// proxy to it, the same pipeline in front.
func ExampleInstance_Proxy() {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "upstream") }))
	defer up.Close()
	cfg, err := config.Parse([]byte(`
upstream: `+up.URL+`
admin: { listen: "127.0.0.1:0", tokens: { write: example-token-0123456789abcdef } }
tiers: { free: { rate: 1, period: 1m, burst: 1, priority: 1 } }
default_tier: free
rules: [ { name: per-ip, match: { path: / }, key: ip } ]
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := throttled.New(context.Background(), cfg, throttled.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	proxy, err := t.Proxy()
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		w := httptest.NewRecorder()
		proxy.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Println(w.Code, w.Body.String()[:8])
	}
	// Output:
	// 200 upstream
	// 429 {"error"
}
