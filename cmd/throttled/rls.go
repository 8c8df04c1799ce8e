package main

import (
	"context"
	"fmt"
	"net"

	"github.com/throttledhq/throttled/limiter/rls"
)

// bindRLS binds rls.listen; nil when the service is off.
func bindRLS(srv *rls.Server, addr string, addrs map[string]string) (server, error) {
	if srv == nil {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rls: %w", err)
	}
	addrs["rls"] = ln.Addr().String()
	return grpcServer{srv: srv, ln: ln}, nil
}

// grpcServer is the rate limit service on its listener.
type grpcServer struct {
	srv *rls.Server
	ln  net.Listener
}

func (g grpcServer) serve() error                       { return g.srv.Serve(g.ln) }
func (g grpcServer) shutdown(ctx context.Context) error { return g.srv.Shutdown(ctx) }
func (g grpcServer) close() error                       { return g.ln.Close() }
