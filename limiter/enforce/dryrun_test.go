package enforce_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestDryRun: in a dry run nothing is refused for the dry run's cause.
// The request passes with the headers an admitted request gets (no
// Retry-After), the would-be refusal is counted dry_run_<reason> and is
// the Result's DryRun, and the refusal log hears nothing. DryRunLoad
// covers the multiplier's shed and the tier cap, never the quota: a
// request over quota stays 429, even when it would be shed too (quota
// first). DryRunAll covers the quota too, and a delay rule does not wait.
func TestDryRun(t *testing.T) {
	perIP := enforce.Rule{Name: "per-ip", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second}
	quota := enforce.Rule{Name: "trial", Path: "/", Keys: []string{"ip"}, Limit: 2, Period: time.Minute}
	for _, tc := range []struct {
		name   string
		mode   enforce.DryRun
		rules  []enforce.Rule
		mults  multipliers
		rates  rates
		codes  []int
		dryRun string // the last request's Result.DryRun
		want   map[string]int
		log    int // refusal log lines
	}{
		{name: "off: multiplier shed", mode: enforce.DryRunOff, rules: []enforce.Rule{quota}, mults: multipliers{"free": 0.01},
			codes: []int{200, 503}, want: map[string]int{"free/trial/allowed": 1, "free/trial/shed": 1}, log: 1},
		{name: "load: multiplier shed", mode: enforce.DryRunLoad, rules: []enforce.Rule{quota}, mults: multipliers{"free": 0.01},
			codes: []int{200, 200}, dryRun: "shed", want: map[string]int{"free/trial/allowed": 1, "free/trial/dry_run_shed": 1}},
		{name: "load: tier cap", mode: enforce.DryRunLoad, rules: []enforce.Rule{perIP}, rates: rates{"free": 1},
			codes: []int{200, 200}, dryRun: "shed",
			want: map[string]int{"free/per-ip/allowed": 2, "free/tier_admission/allowed": 1, "free/tier_admission/dry_run_shed": 1}},
		{name: "load: over quota stays 429", mode: enforce.DryRunLoad, rules: []enforce.Rule{quota},
			codes: []int{200, 200, 429}, want: map[string]int{"free/trial/allowed": 2, "free/trial/over_quota": 1}, log: 1},
		{name: "load: over quota and shed is 429", mode: enforce.DryRunLoad, rules: []enforce.Rule{perIP, quota},
			mults: multipliers{"free": 0.01}, codes: []int{200, 200, 429},
			want: map[string]int{"free/per-ip/allowed": 1, "free/per-ip/dry_run_shed": 1,
				"free/trial/allowed": 1, "free/trial/over_quota": 1}, log: 1}, // the shed spent trial's quota too
		{name: "all: over quota", mode: enforce.DryRunAll, rules: []enforce.Rule{quota},
			codes: []int{200, 200, 200}, dryRun: "over_quota", want: map[string]int{"free/trial/allowed": 2, "free/trial/dry_run_over_quota": 1}},
		{name: "all: multiplier shed", mode: enforce.DryRunAll, rules: []enforce.Rule{quota}, mults: multipliers{"free": 0.01},
			codes: []int{200, 200}, dryRun: "shed", want: map[string]int{"free/trial/allowed": 1, "free/trial/dry_run_shed": 1}},
		{name: "all: a delay rule does not wait", mode: enforce.DryRunAll, codes: []int{200, 200}, dryRun: "delayed",
			rules: []enforce.Rule{{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second, Burst: 1,
				Mode: enforce.ModeDelay, MaxWait: 250 * time.Millisecond}},
			want: map[string]int{"free/smooth/allowed": 1, "free/smooth/dry_run_delayed": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fakeSleep{now: t0}
			var counts decisionCounts
			var log refusalLines
			s := enforce.Settings{Now: fs.Now, Sleep: fs.Sleep, Decisions: &counts, RefusalLog: &log, DryRun: tc.mode}
			if tc.mults != nil {
				s.Multipliers = tc.mults
			}
			if tc.rates != nil {
				s.Rates = tc.rates
			}
			e, err := enforce.New(limiter.NewMemory(limiter.WithClock(fs.Now)),
				enforce.Policy{Tiers: testTiers, Rules: tc.rules}, s)
			if err != nil {
				t.Fatal(err)
			}
			if e.DryRun() != tc.mode {
				t.Errorf("DryRun() %v, want %v", e.DryRun(), tc.mode)
			}
			h := e.Middleware(okHandler())
			for i, want := range tc.codes[:len(tc.codes)-1] {
				if w := get(t, h, "/"); w.Code != want {
					t.Fatalf("request %d: %d, want %d", i+1, w.Code, want)
				}
			}
			res := checkAndWrite(t, e, tc.codes[len(tc.codes)-1])
			if res.DryRun != tc.dryRun {
				t.Errorf("Result.DryRun %q, want %q", res.DryRun, tc.dryRun)
			}
			if got := counts.get(); !maps.Equal(got, tc.want) {
				t.Errorf("decisions %v, want %v", got, tc.want)
			}
			if len(log.lines) != tc.log {
				t.Errorf("refusal log %q, want %d lines", log.lines, tc.log)
			}
		})
	}
}

// checkAndWrite checks the last request and writes its answer as the
// middleware does: its status must be want, and a dry run's pass carries
// the headers of an admitted request, no Retry-After.
func checkAndWrite(t *testing.T, e *enforce.Enforcer, want int) enforce.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "192.0.2.1:1234"
	res := e.Check(context.Background(), req)
	status := http.StatusOK
	if !res.Allowed {
		status = res.Status
	}
	h := http.Header{}
	res.WriteHeaders(h)
	if status != want {
		t.Errorf("last request: %d, want %d", status, want)
	}
	if res.Allowed && h.Get(enforce.HeaderRetryAfter) != "" {
		t.Errorf("an admitted request with Retry-After %q", h.Get(enforce.HeaderRetryAfter))
	}
	return res
}

// TestDryRunSettingIsChecked: an unknown DryRun value is refused, naming
// the setting; the modes have names.
func TestDryRunSettingIsChecked(t *testing.T) {
	_, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: testTiers}, enforce.Settings{DryRun: 7})
	if err == nil || !strings.Contains(err.Error(), "DryRun") {
		t.Errorf("DryRun 7: %v, want an error naming DryRun", err)
	}
	for m, want := range map[enforce.DryRun]string{enforce.DryRunOff: "off", enforce.DryRunLoad: "load", enforce.DryRunAll: "all"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", m, m.String(), want)
		}
	}
}

// TestCheckKeysDryRun: a gateway's check in a dry run is allowed (200 on
// POST /v1/check) and names the would-be answer in dry_run.
func TestCheckKeysDryRun(t *testing.T) {
	e := checkEnforcer(t, limiter.NewMemory(), enforce.Settings{DryRun: enforce.DryRunAll})
	h := e.CheckHandler(nil)
	var last enforce.CheckAnswer
	for i := range 4 {
		var w *httptest.ResponseRecorder
		if w, last = postCheck(t, h, `{"rule":"per-key","key":"k"}`); w.Code != http.StatusOK || w.Header().Get(enforce.HeaderRetryAfter) != "" {
			t.Fatalf("check %d: %d, Retry-After %q; want 200 without", i+1, w.Code, w.Header().Get(enforce.HeaderRetryAfter))
		}
	}
	if !last.Allowed || last.DryRun != "over_quota" || last.Reason != "allowed" {
		t.Errorf("answer %+v: want allowed, dry_run over_quota", last)
	}
}

// TestDryRunOnRequestSpan: the request's span names the refusal a dry run
// let pass (throttled.dry_run), and only then.
func TestDryRunOnRequestSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "per-ip", Path: "/", Keys: []string{"ip"}, Limit: 1, Period: time.Minute},
	}}, enforce.Settings{DryRun: enforce.DryRunAll})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ctx, span := tp.Tracer("test").Start(t.Context(), "request")
		e.Middleware(okHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		span.End()
	}
	for i, want := range []string{"", "over_quota"} {
		got := ""
		for _, kv := range rec.Ended()[i].Attributes() {
			if kv.Key == "throttled.dry_run" {
				got = kv.Value.AsString()
			}
		}
		if got != want {
			t.Errorf("span %d: throttled.dry_run %q, want %q", i, got, want)
		}
	}
}
