package overload

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

func refusal(status int, reason limiter.Reason) []byte { return refusalBy(status, reason, "per-key") }

func refusalBy(status int, reason limiter.Reason, rule string) []byte {
	res := enforce.Result{Limited: true, Status: status, Decision: limiter.Decision{Reason: reason},
		Rule: rule, Tier: "free", RetryAfter: 1}
	return res.Body()
}

// The bodies are the ones throttled sends: the limiter's refusals and the
// proxy's bulkhead and breaker answers (cmd/throttled/proxy.go).
func TestClassify(t *testing.T) {
	marked := http.Header{}
	marked.Set(MarkerHeader, "1")
	for _, tc := range []struct {
		name   string
		status int
		h      http.Header
		body   []byte
		want   Class
	}{
		{"200", 200, nil, []byte("ok"), OK},
		{"204", 204, nil, nil, OK},
		{"429 over quota", 429, nil, refusal(429, limiter.OverQuota), OverQuota},
		{"503 shed", 503, nil, refusal(503, limiter.Shed), Shed},
		{"503 shed by the tier cap", 503, nil, refusalBy(503, limiter.Shed, "tier_admission"), Capped},
		{"503 shed by the gate", 503, nil, refusalBy(503, limiter.Shed, "concurrency"), Gated},
		{"503 bulkhead", 503, nil, []byte(`{"error":"service busy, retry later","reason":"bulkhead","retry_after_seconds":2,"tier":"free","rule":""}` + "\n"), Bulkhead},
		{"503 breaker", 503, nil, []byte(`{"error":"upstream unavailable, retry later","reason":"breaker_open","retry_after_seconds":1}` + "\n"), Breaker},
		{"503 backend marker", 503, marked, []byte(`{"error":"backend overloaded"}`), Backend503},
		{"503 marker wins over a body", 503, marked, refusal(503, limiter.Shed), Backend503},
		{"503 unknown reason", 503, nil, []byte(`{"reason":"maintenance"}`), Other},
		{"503 not JSON", 503, nil, []byte("Service Unavailable"), Other},
		{"503 spaced JSON", 503, nil, []byte(`{ "reason" : "shed" }`), Shed},
		{"503 reason not a string", 503, nil, []byte(`{"reason": 3}`), Other},
		{"503 reason unterminated", 503, nil, []byte(`{"reason":"sh`), Other},
		{"503 empty body", 503, nil, nil, Other},
		{"502", 502, nil, nil, Other},
		{"404", 404, nil, nil, Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.status, tc.h, tc.body); got != tc.want {
				t.Fatalf("Classify(%d, %s) = %v, want %v", tc.status, tc.body, got, tc.want)
			}
		})
	}
}

func TestClassString(t *testing.T) {
	want := []string{"ok", "over_quota", "backend_503", "shed", "breaker", "bulkhead", "capped", "gated", "other", "failed", "dropped"}
	for c := range NumClasses {
		if c.String() != want[c] {
			t.Errorf("Class(%d) = %q, want %q", c, c.String(), want[c])
		}
	}
	if s := NumClasses.String(); s != "Class(11)" {
		t.Errorf("out of range: %q", s)
	}
}

func TestParseModes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Mode
	}{
		{"controller", []Mode{Controller}},
		{"static", []Mode{Static}},
		{"off", []Mode{Off}},
		{"all", []Mode{Controller, Static, Off}},
	} {
		got, err := ParseModes(tc.in)
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("ParseModes(%q) = %v, %v", tc.in, got, err)
		}
		for i := range got {
			if got[i] != tc.want[i] || got[i].String() != tc.in && tc.in != "all" {
				t.Fatalf("ParseModes(%q) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
	if _, err := ParseModes("on"); !errors.Is(err, ErrUnknownMode) {
		t.Fatalf("ParseModes(on) error %v, want ErrUnknownMode", err)
	}
}

func TestParseFront(t *testing.T) {
	for _, f := range []Front{Proxy, Middleware, Echo} {
		got, err := ParseFront(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFront(%q) = %v, %v", f, got, err)
		}
	}
	if _, err := ParseFront("grpc"); err == nil || !strings.Contains(err.Error(), `front "grpc" (want proxy, middleware or echo)`) {
		t.Errorf("ParseFront(grpc) error %v, want the fronts named", err)
	}
}
