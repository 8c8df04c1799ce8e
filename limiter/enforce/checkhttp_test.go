package enforce_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

func postCheck(t *testing.T, h http.Handler, body string) (*httptest.ResponseRecorder, enforce.CheckAnswer) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/check", strings.NewReader(body)))
	var a enforce.CheckAnswer
	if w.Code != http.StatusBadRequest && w.Code != http.StatusMethodNotAllowed {
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			t.Fatalf("%s → %d %q: %v", body, w.Code, w.Body.String(), err)
		}
	}
	return w, a
}

// checkStep is one POST /v1/check and what it must answer. The steps of a
// table run in order against one enforcer.
type checkStep struct {
	name     string
	body     string
	status   int
	decision string // X-Throttled-Decision; "" when allowed
	want     func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer)
}

func runChecks(t *testing.T, h http.Handler, steps []checkStep) {
	t.Helper()
	for _, s := range steps {
		w, a := postCheck(t, h, s.body)
		if w.Code != s.status || w.Header().Get(enforce.HeaderDecision) != s.decision {
			t.Fatalf("%s: %s → %d (decision %q) %s; want %d (decision %q)", s.name, s.body, w.Code,
				w.Header().Get(enforce.HeaderDecision), w.Body.String(), s.status, s.decision)
		}
		if s.want != nil {
			s.want(t, w, a)
		}
	}
}

// TestCheckEndpoint: POST /v1/check answers as the middleware would, with
// the same headers: within the limit, over it, shed, several checks (the
// most restrictive wins), a cost, bad input.
func TestCheckEndpoint(t *testing.T) {
	store := redisStore(testenv.StartRedis(t).Client(), t, nil)
	e := checkEnforcer(t, store, enforce.Settings{Multipliers: multipliers{"free": 0.34}})
	h := e.CheckHandler(nil)
	runChecks(t, h, []checkStep{
		{"within limit", `{"rule":"per-key","key":"pat"}`, 200, "", func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
			wantHeaders(t, w, map[string]string{"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4",
				"RateLimit-Policy": `"per-key";q=5;w=60`, "Retry-After": ""})
			if !a.Allowed || a.Status != 200 || a.Reason != "allowed" || a.Tier != "premium" || a.Remaining != 4 ||
				len(a.Checks) != 1 || !a.Checks[0].Asked {
				t.Errorf("answer %+v", a)
			}
		}},
		{"cost", `{"rule":"per-key","key":"pat","cost":4}`, 200, "", func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
			if a.Remaining != 0 {
				t.Errorf("remaining %d after a cost of 4 with 4 left, want 0", a.Remaining)
			}
		}},
		{"over limit", `{"rule":"per-key","key":"pat"}`, 429, "over_quota", func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
			wantHeaders(t, w, map[string]string{"Retry-After": "12", "X-RateLimit-Remaining": "0"})
			if a.Allowed || a.Status != 429 || a.Error != "too many requests" || a.RetryAfterSeconds != 12 || a.Rule != "per-key" {
				t.Errorf("answer %+v", a)
			}
		}},
		{"shed", `{"rule":"per-key","key":"carl"}`, 200, "", nil},
		{"shed", `{"rule":"per-key","key":"carl"}`, 503, "shed", func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
			if a.Reason != "shed" || a.Error != "service overloaded, retry later" || w.Header().Get("Retry-After") == "" {
				t.Errorf("answer %+v, Retry-After %q", a, w.Header().Get("Retry-After"))
			}
		}},
		{"several", `{"checks":[{"rule":"per-key","key":"ann","tier":"premium"},{"rule":"search","key":"ann","tier":"premium"}]}`,
			200, "", func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
				// per-key: 4 of 5 left; search: 1 of 2 → search is reported.
				wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": "1", "RateLimit-Policy": `"search";q=2;w=10`})
				if a.Rule != "search" || len(a.Checks) != 2 || a.Checks[0].Remaining != 4 || a.Checks[1].Remaining != 1 {
					t.Errorf("answer %+v", a)
				}
			}},
		{"several", `{"checks":[{"rule":"per-key","key":"ann","tier":"premium"},{"rule":"search","key":"ann","tier":"premium"}]}`,
			200, "", nil},
		{"several", `{"checks":[{"rule":"per-key","key":"ann","tier":"premium"},{"rule":"search","key":"ann","tier":"premium"}]}`,
			429, "over_quota", func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
				if a.Rule != "search" || !a.Checks[1].Asked || a.Checks[1].Reason != "over_quota" {
					t.Errorf("answer %+v, want refused by search", a)
				}
			}},
		{"unknown rule", `{"rule":"nope","key":"pat"}`, 400, "", wantField("rule")},
		{"unknown rule in a batch", `{"checks":[{"rule":"per-key","key":"x"},{"rule":"nope","key":"x"}]}`, 400, "", wantField("checks[1].rule")},
		{"no rule", `{"key":"pat"}`, 400, "", wantField("rule")},
		{"both forms", `{"rule":"per-key","checks":[{"rule":"per-key"}]}`, 400, "", wantField("checks")},
		{"unknown field", `{"rule":"per-key","client":"pat"}`, 400, "", wantField("body")},
		{"two values", `{"rule":"per-key"} {"rule":"per-key"}`, 400, "", wantField("body")},
	})
	// The refused batch gave per-key back: ann spent 2 of 5, in the two admitted checks.
	d, err := store.Decide(t.Context(), limiter.Request{Key: "per-key|premium|3:ann",
		Rule: limiter.Rule{Name: "per-key", Limit: 5, Period: time.Minute, Burst: 5}, Peek: true})
	if err != nil || d.Remaining != 3 {
		t.Fatalf("ann's premium per-key bucket: %+v, %v; want 3 left (the refused check refunded)", d, err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/check", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Fatalf("GET: %d, Allow %q; want 405, POST", w.Code, w.Header().Get("Allow"))
	}
}

func wantField(field string) func(t *testing.T, w *httptest.ResponseRecorder, _ enforce.CheckAnswer) {
	return func(t *testing.T, w *httptest.ResponseRecorder, _ enforce.CheckAnswer) {
		var e struct{ Error, Field string }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Field != field || e.Error == "" {
			t.Errorf("400 body %q, want an error naming %s", w.Body.String(), field)
		}
	}
}

// TestCheckEndpointRedisDown: with Redis down the checks are decided by the
// fallback (the local share of the quota) and say so.
func TestCheckEndpointRedisDown(t *testing.T) {
	fb, err := fallback.New(redisstore.New(testenv.DeadRedis(t)), fallback.Settings{Instances: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := checkEnforcer(t, fb, enforce.Settings{}).CheckHandler(nil)
	fellBack := func(t *testing.T, w *httptest.ResponseRecorder, a enforce.CheckAnswer) {
		if !a.Fallback || a.StoreError != "" || !a.Checks[0].Fallback {
			t.Errorf("answer %+v, want a fallback decision", a)
		}
	}
	body := `{"rule":"per-key","key":"alice"}`
	runChecks(t, h, []checkStep{
		{"fallback 1", body, 200, "", fellBack}, {"fallback 2", body, 200, "", fellBack}, {"fallback 3", body, 200, "", fellBack},
		{"fallback over limit", body, 429, limiter.OverQuota.String(), fellBack},
	})
}

// TestCheckPeek: a query with "peek": true reads the buckets without
// spending anything, whatever its cost; the next plain check spends.
func TestCheckPeek(t *testing.T) {
	h := checkEnforcer(t, limiter.NewMemory(), enforce.Settings{}).CheckHandler(nil)
	remaining := func(want int64) func(*testing.T, *httptest.ResponseRecorder, enforce.CheckAnswer) {
		return func(t *testing.T, _ *httptest.ResponseRecorder, a enforce.CheckAnswer) {
			if !a.Allowed || a.Remaining != want {
				t.Errorf("answer %+v, want allowed with %d remaining", a, want)
			}
		}
	}
	runChecks(t, h, []checkStep{
		{"peek", `{"rule":"per-key","key":"pat","peek":true}`, 200, "", remaining(5)},
		{"peek again, a cost beyond the bucket", `{"rule":"per-key","key":"pat","peek":true,"cost":99}`, 200, "", remaining(5)},
		{"spend", `{"rule":"per-key","key":"pat"}`, 200, "", remaining(4)},
	})
}
