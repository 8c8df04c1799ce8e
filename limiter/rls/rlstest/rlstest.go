// Package rlstest serves an rls.Server on a loopback listener for tests,
// with a client of it, as net/http/httptest does for HTTP handlers.
package rlstest

import (
	"context"
	"net"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter/rls"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Serve serves srv on a free loopback port until the test ends (then it
// shuts srv down gracefully and fails tb if serving failed), and returns a
// client of it and the client's connection.
func Serve(tb testing.TB, srv *rls.Server) (rlsv3.RateLimitServiceClient, *grpc.ClientConn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("rls: Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			tb.Errorf("rls: Serve: %v", err)
		}
	})
	return rlsv3.NewRateLimitServiceClient(conn), conn
}
