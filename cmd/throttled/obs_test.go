package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestServeShadowRuleRefusesNothingInMetrics: a shadow rule over its limit
// answers 200 and is counted as shadow_over_quota, never as over_quota, so
// the 429 panels and ThrottledRefusalSpike see no refusal.
func TestServeShadowRuleRefusesNothingInMetrics(t *testing.T) {
	up := testenv.Upstream(t)
	cfg := configtest.Serve(t, up.URL, "")
	more, err := config.Parse([]byte(`tiers: {free: {rate: 100, period: 1m}}
rules:
  - name: trial
    match: { path: / }
    key: header:X-API-Key
    limit: 4
    period: 1m
    mode: shadow
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rules = more.Rules
	addrs := startServe(t, cfg)
	for i := range 8 {
		if resp, _ := testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/x", "", "X-API-Key", "k"); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d, want 200 (shadow)", i, resp.StatusCode)
		}
	}
	_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	for series, want := range map[string]float64{
		`throttled_decisions_total{decision="allowed",rule="trial",tier="free"}`:           4,
		`throttled_decisions_total{decision="shadow_over_quota",rule="trial",tier="free"}`: 4,
		`throttled_decisions_total{decision="over_quota",rule="trial",tier="free"}`:        0,
	} {
		if got := testenv.MetricValue(t, metrics, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

// TestServeExportsWhatItEnforces: every instance exports its build, the
// config version in force, the store error series at 0, and the
// multiplier it enforces per tier with its source: a pin shows as
// source="pin" at its value, not the controller's 1.
func TestServeExportsWhatItEnforces(t *testing.T) {
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, ""))
	admin := "http://" + addrs["admin"]
	resp, body := testenv.Call(t, "PUT", admin+"/v1/multipliers/free/pin", `{"multiplier":0.3,"ttl":"10m"}`,
		"Authorization", "Bearer "+testenv.WriteToken, "Content-Type", "application/json")
	if resp.StatusCode/100 != 2 {
		t.Fatalf("pin: %d %s", resp.StatusCode, body)
	}
	pinned := `throttled_effective_multiplier{source="pin",tier="free"} 0.3`
	stepped := `throttled_effective_multiplier{source="controller",tier="premium"} 1`
	var metrics string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, metrics = testenv.Call(t, "GET", admin+"/metrics", ""); strings.Contains(metrics, pinned) && strings.Contains(metrics, stepped) {
			break
		}
	}
	for _, want := range []string{pinned, stepped,
		`throttled_store_errors_total{kind="redis"} 0`, `throttled_build_info{goversion="go`, `,version="dev"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if v := testenv.MetricValue(t, metrics, "throttled_config_version"); v < 1 {
		t.Errorf("throttled_config_version = %v, want the pin's write (≥ 1)", v)
	}
}

// TestServeMetricsPassPromtool: the whole /metrics exposition of a serve
// with the controller, the inner loop, refusals and a pin passes
// `promtool check metrics` (names, units, types, help).
func TestServeMetricsPassPromtool(t *testing.T) {
	up := testenv.Upstream(t)
	cfg := configtest.Serve(t, up.URL, "")
	addrs := startServe(t, cfg)
	for range 7 {
		testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/x", "", "X-API-Key", "k")
	}
	// The controller shows a signal's target from its first tick with a
	// reading: up to a period after the calls.
	var metrics string
	testenv.WaitFor(t, 10*time.Second, "the controller's signal targets in /metrics", func() bool {
		_, metrics = testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
		return strings.Contains(metrics, "throttled_controller_signal_target_seconds{")
	})
	cmd := exec.Command(testenv.Binary(t, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(metrics)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, want := range []string{"throttled_decisions_total{", "throttled_effective_multiplier{", "throttled_build_info{",
		"throttled_controller_signal_target_seconds{"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestServeExportsTracesOverOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, a
// proxied request's span, with the enforcer's decision on it, reaches an
// OTLP/HTTP receiver (a fake one on 127.0.0.1), and the upstream gets our
// traceparent.
func TestServeExportsTracesOverOTLP(t *testing.T) {
	spans := make(chan *coltrace.ExportTraceServiceRequest, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", 400)
			return
		}
		spans <- &req
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(recv.Close) // after serve's last flush
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	traceparent := make(chan string, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparent <- r.Header.Get("Traceparent")
	}))
	defer up.Close()
	addrs := startServe(t, configtest.Serve(t, up.URL, ""))
	if resp, _ := testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/x", "", "X-API-Key", "k"); resp.StatusCode != 200 {
		t.Fatalf("proxied request: %d", resp.StatusCode)
	}
	if tp := <-traceparent; !strings.HasPrefix(tp, "00-") {
		t.Errorf("upstream got traceparent %q, want ours", tp)
	}
	select {
	case req := <-spans:
		var names []string
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					names = append(names, sp.GetName())
					for _, kv := range sp.GetAttributes() {
						if kv.GetKey() == "throttled.decision" && kv.GetValue().GetStringValue() == "allowed" && sp.GetName() == "throttled proxy" {
							return
						}
					}
				}
			}
		}
		t.Fatalf("spans %v: none is the proxy's with throttled.decision=allowed", names)
	case <-time.After(20 * time.Second):
		t.Fatal("no span reached the OTLP receiver within 20s")
	}
}
