// Package throttled is the whole of throttled as a Go library: New builds
// it from a config.Config (the file `throttled serve` reads, see
// config.Load), Run runs its loops (the controller, the inner loop,
// watchers, heartbeats), and its fronts serve it:
//
//   - Middleware(next): net/http, the whole request pipeline in front of
//     next (quota rules, tier admission, multipliers, bulkheads, the inner
//     loop's gate, breakers);
//   - Echo(): the same pipeline as Echo v4 middleware;
//   - Proxy(): the sidecar's reverse proxy to the configured upstream;
//   - RLS(): Envoy's rate limit service, and POST /v1/check on
//     AdminHandler, which decide without a handler;
//   - AdminHandler(): the REST admin API, /metrics, /healthz, /readyz.
//
// Every Options field's zero value means the embedded default: the
// in-memory store, in-process signals, a registry of its own.
// cmd/throttled is this package behind a command line.
package throttled
