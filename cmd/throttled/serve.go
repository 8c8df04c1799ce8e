package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
)

// serveFlags are the common settings a flag may override (after the file
// and the environment).
type serveFlags struct {
	config, listen, upstream, adminListen, redisURL, promURL, logLevel string
}

func serve(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "", "run the proxy, admin API, controller, /metrics, /healthz and /readyz")
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "YAML configuration file (required)")
	fs.StringVar(&f.listen, "listen", "", "proxy listen address (overrides listen)")
	fs.StringVar(&f.upstream, "upstream", "", "upstream URL to proxy to (overrides upstream)")
	fs.StringVar(&f.adminListen, "admin-listen", "", "admin API, /metrics, /healthz, /readyz address (overrides admin.listen)")
	fs.StringVar(&f.redisURL, "redis-url", "", "Redis URL (overrides redis.url)")
	fs.StringVar(&f.promURL, "prometheus-url", "", "Prometheus URL (overrides prometheus.url)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (overrides log.level)")
	if err := parseFlags(fs, args, stdout, 0); err != nil {
		return err
	}
	if f.config == "" {
		return &usageError{"serve: --config FILE is required"}
	}
	env, flags := f.env()
	cfg, warnings, err := config.LoadChecked(f.config, append(os.Environ(), env...), flags)
	if r, ok := err.(config.Report); ok {
		return fmt.Errorf("%s: %s\n%w", f.config, r.Summary(), r)
	} else if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // reloads (throttled.Instance.RunReloads), never ends serve
	defer signal.Stop(hup)
	log := newLogger(stderr, cfg.Log.Level)
	config.LogWarnings(log, warnings)
	redis.SetLogger(redisLog{log}) // process-wide: this is main
	return serveWith(ctx, cfg, log, nil, &throttled.ReloadSettings{Path: f.config, Signals: hup,
		Load: func() (*config.Config, error) {
			c, w, err := config.LoadChecked(f.config, append(os.Environ(), env...), flags)
			config.LogWarnings(log, w)
			return c, err
		}})
}

// env turns the set flags into environment overrides, which come last,
// and maps each variable to its flag (so that errors name the flag).
func (f *serveFlags) env() ([]string, map[string]string) {
	var out []string
	flags := map[string]string{}
	for k, v := range map[string]string{"LISTEN": f.listen, "UPSTREAM": f.upstream, "ADMIN_LISTEN": f.adminListen,
		"REDIS_URL": f.redisURL, "PROMETHEUS_URL": f.promURL, "LOG_LEVEL": f.logLevel} {
		if v != "" {
			out = append(out, config.EnvPrefix+k+"="+v)
			flags[config.EnvPrefix+k] = "--" + strings.ToLower(strings.ReplaceAll(k, "_", "-"))
		}
	}
	return out, flags
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// redisLog routes go-redis's own messages (dial failures and the like)
// into the structured log at warn level.
type redisLog struct{ log *slog.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	r.log.Warn(fmt.Sprintf(format, v...), "component", "go-redis")
}

// runServe builds a throttled.Instance, serves it until ctx ends, then
// drains. When started is not nil it receives the bound addresses (for
// tests).
func runServe(ctx context.Context, cfg *config.Config, log *slog.Logger, started chan<- map[string]string) error {
	return serveWith(ctx, cfg, log, started, nil)
}

// serveWith is runServe reloading the file as rs says (nil: never). On
// ctx's end /readyz fails at once, the listeners serve on for
// shutdown_delay (load balancers stop sending), then close and drain.
func serveWith(ctx context.Context, cfg *config.Config, log *slog.Logger, started chan<- map[string]string,
	rs *throttled.ReloadSettings) error {
	// Without an upstream this instance serves no traffic (the proxy is
	// its only front; the rate limit service and check decide without
	// one): a controller replica.
	t, err := throttled.New(ctx, cfg, throttled.Options{Logger: log, ControllerOnly: cfg.Upstream == ""})
	if err != nil {
		return err
	}
	defer t.Close()
	servers, addrs, err := listen(t, cfg)
	if err != nil {
		return err
	}
	log.Info("throttled serving", "addrs", addrs, "version", throttled.Version)
	if started != nil {
		started <- addrs
	}
	runCtx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	loops.Go(func() { _ = t.Run(runCtx) })
	if rs != nil {
		loops.Go(func() { _ = t.RunReloads(runCtx, *rs) })
	}
	errc := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errc <- srv.serve() }()
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
		log.Error("server failed", "err", err)
	}
	t.BeginShutdown()
	if d := cfg.ShutdownDelay.D(); d > 0 && err == nil {
		log.Info("shutting down: /readyz fails; listeners close after shutdown_delay", "shutdown_delay", d.String())
		time.Sleep(d)
	}
	log.Info("shutting down: draining in-flight requests")
	drainCtx, drainCancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer drainCancel()
	for _, srv := range servers {
		_ = srv.shutdown(drainCtx)
	}
	cancel() // controller releases its lease, heartbeat leaves
	loops.Wait()
	return err
}

// server is one listener's server: HTTP, or the gRPC rate limit service
// (rls.go).
type server interface {
	serve() error
	shutdown(ctx context.Context) error // graceful until ctx ends
	close() error                       // its listener, when another failed to bind
}

type httpServer struct {
	http *http.Server
	ln   net.Listener
}

func (s httpServer) serve() error {
	if err := s.http.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s httpServer) shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }
func (s httpServer) close() error                       { return s.ln.Close() }

// maxHeaderBytes bounds the request line and headers on both listeners
// (net/http answers 431 above it); admin bodies are bounded by the API.
const maxHeaderBytes = 64 << 10

// listen binds the admin listener (over TLS when configured), with an
// upstream the proxy, and with rls.listen the rate limit service.
func listen(t *throttled.Instance, cfg *config.Config) ([]server, map[string]string, error) {
	addrs := map[string]string{}
	var out []server
	bind := func(name, addr string, h http.Handler, tc *tls.Config) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if tc != nil {
			ln = tls.NewListener(ln, tc)
		}
		addrs[name] = ln.Addr().String()
		out = append(out, httpServer{ln: ln, http: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			MaxHeaderBytes: maxHeaderBytes}})
		return nil
	}
	tc, err := adminTLS(&cfg.Admin.TLS)
	if err == nil {
		err = bind("admin", cfg.Admin.Listen, t.AdminHandler(), tc)
	}
	if err != nil {
		return nil, nil, err
	}
	var proxy http.Handler
	if proxy, err = t.Proxy(); err == nil && proxy != nil {
		err = bind("proxy", cfg.Listen, proxy, nil)
	}
	if err == nil {
		var g server
		if g, err = bindRLS(t.RLS(), cfg.RLS.Listen, addrs); g != nil {
			out = append(out, g)
		}
	}
	if err != nil {
		for _, srv := range out {
			_ = srv.close()
		}
		return nil, nil, err
	}
	return out, addrs, nil
}

// adminTLS loads the admin listener's certificate; nil without one.
func adminTLS(c *config.TLSConfig) (*tls.Config, error) {
	if c.CertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("admin.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
