// Command echo is a small Echo service that embeds throttled: its API is
// protected by quotas per API key (two tiers, free and premium) and by both
// adaptive loops, from a throttled configuration file.
//
//	go run ./examples/echo --config examples/echo/throttled.yaml
//	curl -i -H 'X-API-Key: alice' http://127.0.0.1:8080/api/items
//
// The service itself, /api/items, is a worker pool of fixed capacity (the
// part an overload hurts); throttled's admin API and /metrics listen
// apart, on admin.listen.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. started, when not nil, receives the service's
// and the admin listener's addresses.
func run(ctx context.Context, args []string, logw io.Writer, started chan<- [2]string) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	path := fs.String("config", "examples/echo/throttled.yaml", "throttled configuration file")
	listen := fs.String("listen", "127.0.0.1:8080", "the service's address")
	admin := fs.String("admin-listen", "", "throttled's admin API and /metrics (default: admin.listen)")
	workers := fs.Int("workers", 4, "the service's capacity: requests served at once")
	work := fs.Duration("work", 20*time.Millisecond, "time a request keeps a worker")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	if *admin != "" {
		cfg.Admin.Listen = *admin
	}
	log := slog.New(slog.NewJSONHandler(logw, nil))
	t, err := throttled.New(ctx, cfg, throttled.Options{Logger: log})
	if err != nil {
		return err
	}
	defer t.Close()
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(t.Echo()) // quotas, tier caps, multipliers, the inner loop: the whole pipeline
	e.GET("/api/items", items(*workers, *work))
	return serve(ctx, t, e, [2]string{*listen, cfg.Admin.Listen}, started)
}

// items is the service's one endpoint: a pool of workers, each busy for
// work per request; requests beyond them queue, so latency grows with load.
func items(workers int, work time.Duration) echo.HandlerFunc {
	pool := make(chan struct{}, workers)
	return func(c echo.Context) error {
		select {
		case pool <- struct{}{}:
		case <-c.Request().Context().Done():
			return c.Request().Context().Err()
		}
		defer func() { <-pool }()
		time.Sleep(work)
		return c.JSON(http.StatusOK, map[string]any{"items": []string{"a", "b"}})
	}
}

// serve runs t's loops and serves the service and throttled's admin
// handler on addrs until ctx ends, then drains.
func serve(ctx context.Context, t *throttled.Instance, app http.Handler, addrs [2]string, started chan<- [2]string) error {
	var bound [2]string
	servers := make([]*http.Server, 2)
	for i, h := range []http.Handler{app, t.AdminHandler()} {
		ln, err := net.Listen("tcp", addrs[i])
		if err != nil {
			return err
		}
		bound[i] = ln.Addr().String()
		servers[i] = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := servers[i].Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				slog.Error("serve", "addr", bound[i], "err", err)
			}
		}()
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ran := make(chan struct{})
	go func() { defer close(ran); _ = t.Run(runCtx) }()
	if started != nil {
		started <- bound
	}
	<-ctx.Done()
	drain, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer stop()
	for _, srv := range servers {
		_ = srv.Shutdown(drain)
	}
	cancel()
	<-ran
	return nil
}
