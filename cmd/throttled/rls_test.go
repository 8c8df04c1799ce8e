package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const checkToken = "check-token-0123456789"

// rlsConfig is an embedded serve config with the rate limit service and
// the check endpoint on.
func rlsConfig(t *testing.T) *config.Config {
	t.Helper()
	src := fmt.Sprintf(`admin:
  listen: 127.0.0.1:0
rls:
  listen: 127.0.0.1:0
check:
  enabled: true
  token: %s
tiers:
  free: { rate: 2, period: 1m, burst: 2, priority: 1 }
rules:
  - name: per-key
    match: { path: / }
    key: header:X-API-Key
controller:
  disabled: true
`, checkToken)
	c, err := config.Parse([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeRateLimitService: serve answers Envoy's rate limit service on
// rls.listen and POST /v1/check on the admin listener, both deciding on
// one bucket; the health service says SERVING.
func TestServeRateLimitService(t *testing.T) {
	addrs := startServe(t, rlsConfig(t))
	conn, err := grpc.NewClient(addrs["rls"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &rlsv3.RateLimitRequest{Domain: "throttled", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "rule", Value: "per-key"}, {Key: "api_key", Value: "k1"}}}}}
	r, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), req)
	if err != nil || r.GetOverallCode() != rlsv3.RateLimitResponse_OK || r.GetStatuses()[0].GetLimitRemaining() != 1 {
		t.Fatalf("ShouldRateLimit: %v, %v; want OK with 1 left", r, err)
	}
	admin := "http://" + addrs["admin"]
	body := `{"rule":"per-key","key":"k1"}`
	if resp, _ := testenv.Call(t, "POST", admin+"/v1/check", body); resp.StatusCode != 401 {
		t.Fatalf("check without the token: %d, want 401", resp.StatusCode)
	}
	resp, got := testenv.Call(t, "POST", admin+"/v1/check", body, "Authorization", "Bearer "+checkToken)
	if resp.StatusCode != 200 || !strings.Contains(got, `"remaining":0`) {
		t.Fatalf("check: %d %s, want 200 with 0 left (the gRPC call spent one)", resp.StatusCode, got)
	}
	resp, got = testenv.Call(t, "POST", admin+"/v1/check", body, "Authorization", "Bearer "+checkToken)
	if resp.StatusCode != 429 || resp.Header.Get("X-Throttled-Decision") != "over_quota" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("check over the limit: %d %v %s", resp.StatusCode, resp.Header, got)
	}
	_, metrics := testenv.Call(t, "GET", admin+"/metrics", "")
	for _, want := range []string{`throttled_decisions_total{decision="allowed",rule="per-key",tier="free"} 2`,
		`throttled_decisions_total{decision="over_quota",rule="per-key",tier="free"} 1`,
		`throttled_rls_requests_total{code="OK"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	for err == nil {
		var h *healthpb.HealthCheckResponse
		if h, err = w.Recv(); h.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
	t.Fatalf("health: not SERVING within 10 s: %v", err)
}

func TestRLSConfigValidated(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{"rls:\n  listen: nowhere\n", "rls.listen"},
		{"check:\n  token: x\n", "check.token"},
		{"rls:\n  listen: 127.0.0.1:0\n  workers: -2\n", "rls.workers"},
	} {
		_, err := config.Parse([]byte(testenv.ReadmeConfig+tc.edit), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.edit, err, tc.want)
		}
	}
}
