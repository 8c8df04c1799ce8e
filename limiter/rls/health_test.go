package rls_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/rls"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// waitHealth watches service's health until it is want; it fails when it
// is not within 10 s.
func waitHealth(t *testing.T, conn *grpc.ClientConn, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatal(err)
	}
	var last healthpb.HealthCheckResponse_ServingStatus
	for last != want {
		r, err := w.Recv()
		if err != nil {
			t.Fatalf("health of %q: still %v, want %v: %v", service, last, want, err)
		}
		last = r.GetStatus()
	}
}

// TestHealthServingOnlyWhileReady: the gRPC health service answers SERVING
// while the store is ready (the rule of /readyz), NOT_SERVING while Redis
// is down, and SERVING again when it is back.
func TestHealthServingOnlyWhileReady(t *testing.T) {
	r := testenv.StartRedis(t)
	store := redisStore(r.DeadlineClient(-1))
	_, conn := serve(t, testEnforcer(t, store), rls.Settings{Ready: store.Ready,
		ReadyTimeout: 200 * time.Millisecond, HealthInterval: 20 * time.Millisecond}, nil)
	waitHealth(t, conn, "", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, conn, rls.ServiceName, healthpb.HealthCheckResponse_SERVING)
	r.Kill()
	waitHealth(t, conn, rls.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, conn, "", healthpb.HealthCheckResponse_NOT_SERVING)
	r.Start()
	waitHealth(t, conn, rls.ServiceName, healthpb.HealthCheckResponse_SERVING)
	_, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "other"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("health of an unknown service: %v, want NotFound", err)
	}
}

// TestReflectionOffByDefault: the reflection service answers only when
// Settings.Reflection is set.
func TestReflectionOffByDefault(t *testing.T) {
	for _, on := range []bool{false, true} {
		_, conn := serve(t, testEnforcer(t, limiter.NewMemory()), rls.Settings{Reflection: on}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		var services []string
		if err == nil {
			// Send fails with io.EOF when the server has ended the stream
			// already; Recv then returns its status.
			_ = s.Send(&reflectpb.ServerReflectionRequest{
				MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}})
			var r *reflectpb.ServerReflectionResponse
			r, err = s.Recv()
			for _, svc := range r.GetListServicesResponse().GetService() {
				services = append(services, svc.GetName())
			}
		}
		switch {
		case !on && status.Code(err) != codes.Unimplemented:
			t.Fatalf("reflection off: %v (services %v), want Unimplemented", err, services)
		case on && (err != nil || !slices.Contains(services, rls.ServiceName)):
			t.Fatalf("reflection on: %v, services %v; want %s listed", err, services, rls.ServiceName)
		}
	}
}
