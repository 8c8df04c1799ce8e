package rls_test

import (
	"context"
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/limiter/rls"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// step is one ShouldRateLimit call and what it must answer. The steps of
// a table run in order against one server.
type step struct {
	name string
	req  *rlsv3.RateLimitRequest
	code rlsv3.RateLimitResponse_Code // the overall code, when err is OK
	err  codes.Code
	want func(t *testing.T, r *rlsv3.RateLimitResponse)
}

func run(t *testing.T, c rlsv3.RateLimitServiceClient, steps []step) {
	t.Helper()
	for _, s := range steps {
		r, err := c.ShouldRateLimit(context.Background(), s.req)
		if status.Code(err) != s.err {
			t.Fatalf("%s: error %v, want code %v", s.name, err, s.err)
		}
		if err != nil {
			continue
		}
		if r.GetOverallCode() != s.code || len(r.GetStatuses()) != len(s.req.GetDescriptors()) {
			t.Fatalf("%s: %v with %d statuses, want %v with %d", s.name, r.GetOverallCode(), len(r.GetStatuses()),
				s.code, len(s.req.GetDescriptors()))
		}
		if s.want != nil {
			s.want(t, r)
		}
	}
}

// wantStatus checks status i: its code, limit (requests per unit),
// remaining.
func wantStatus(t *testing.T, r *rlsv3.RateLimitResponse, i int, code rlsv3.RateLimitResponse_Code,
	name string, perUnit uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit, remaining uint32) {
	t.Helper()
	st := r.GetStatuses()[i]
	l := st.GetCurrentLimit()
	if st.GetCode() != code || l.GetName() != name || l.GetRequestsPerUnit() != perUnit || l.GetUnit() != unit ||
		st.GetLimitRemaining() != remaining || st.GetDurationUntilReset() == nil {
		t.Errorf("status %d: %v, want %v %s %d/%v remaining %d", i, st, code, name, perUnit, unit, remaining)
	}
}

func wantHeaders(t *testing.T, r *rlsv3.RateLimitResponse, want map[string]string) {
	t.Helper()
	got := headers(r)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// TestShouldRateLimit: a gRPC client from go-control-plane's stubs against
// a running server, on Redis: within the limit, hits_addend, over the
// limit, shed, several descriptors (the most restrictive wins), an unknown
// domain, descriptors that map onto nothing.
func TestShouldRateLimit(t *testing.T) {
	store := redisStore(testenv.StartRedis(t).Client())
	reg := prometheus.NewRegistry()
	c, _ := serve(t, testEnforcer(t, store), rls.Settings{}, reg)
	minute := rlsv3.RateLimitResponse_RateLimit_MINUTE
	pat := desc("rule", "per-key", "api_key", "pat")
	run(t, c, []step{
		{"within limit", request(0, pat), ok, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			wantStatus(t, r, 0, ok, "per-key", 5, minute, 4)
			wantHeaders(t, r, map[string]string{"x-ratelimit-limit": "5", "x-ratelimit-remaining": "4",
				"ratelimit-policy": `"per-key";q=5;w=60`, "retry-after": "", "x-throttled-decision": ""})
			if meta(r, "decision") != "allowed" || meta(r, "tier") != "premium" || meta(r, "fallback") != "false" {
				t.Errorf("metadata %v", r.GetDynamicMetadata())
			}
		}},
		{"hits_addend", request(3, pat), ok, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			wantStatus(t, r, 0, ok, "per-key", 5, minute, 1)
		}},
		{"descriptor hits_addend over the request's", request(3, withHits(pat, 1)), ok, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			wantStatus(t, r, 0, ok, "per-key", 5, minute, 0)
		}},
		{"over limit", request(0, pat), over, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			wantStatus(t, r, 0, over, "per-key", 5, minute, 0)
			wantHeaders(t, r, map[string]string{"retry-after": "12", "x-throttled-decision": "over_quota"})
			if meta(r, "decision") != "over_quota" || meta(r, "rule") != "per-key" {
				t.Errorf("metadata %v", r.GetDynamicMetadata())
			}
		}},
		{"free under load", request(0, desc("rule", "per-key", "api_key", "carl")), ok, codes.OK, nil},
		{"shed", request(0, desc("rule", "per-key", "api_key", "carl")), over, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			wantHeaders(t, r, map[string]string{"x-throttled-decision": "shed"})
			if headers(r)["retry-after"] == "" || meta(r, "decision") != "shed" || meta(r, "tier") != "free" {
				t.Errorf("shed answer: headers %v, metadata %v", headers(r), r.GetDynamicMetadata())
			}
		}},
		{"several", request(0, desc("rule", "per-key", "tier", "premium", "api_key", "ann"),
			desc("rule", "search", "tier", "premium", "api_key", "ann")), ok, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			wantStatus(t, r, 0, ok, "per-key", 5, minute, 4)
			wantStatus(t, r, 1, ok, "search", 12, minute, 1) // 2 per 10 s
			wantHeaders(t, r, map[string]string{"x-ratelimit-remaining": "1", "ratelimit-policy": `"search";q=2;w=10`})
		}},
		{"several", request(0, desc("rule", "per-key", "tier", "premium", "api_key", "ann"),
			desc("rule", "search", "tier", "premium", "api_key", "ann")), ok, codes.OK, nil},
		{"several: the most restrictive refuses", request(0, desc("rule", "per-key", "tier", "premium", "api_key", "ann"),
			desc("rule", "search", "tier", "premium", "api_key", "ann")), over, codes.OK, func(t *testing.T, r *rlsv3.RateLimitResponse) {
			if r.GetStatuses()[0].GetCode() != ok || r.GetStatuses()[1].GetCode() != over {
				t.Errorf("statuses %v, want per-key OK and search OVER_LIMIT", r.GetStatuses())
			}
		}},
		{"several key entries", request(0, desc("rule", "search", "tier", "premium", "api_key", "x", "remote_address", "192.0.2.1")), ok, codes.OK,
			func(t *testing.T, r *rlsv3.RateLimitResponse) { wantStatus(t, r, 0, ok, "search", 12, minute, 1) }},
		{"no key entry: one bucket for the rule", request(0, desc("rule", "search")), ok, codes.OK, nil},
		{"unknown domain", &rlsv3.RateLimitRequest{Domain: "other", Descriptors: []*ratelimitv3.RateLimitDescriptor{pat}}, ok, codes.NotFound, nil},
		{"no rule entry", request(0, desc("api_key", "pat")), ok, codes.InvalidArgument, nil},
		{"unknown rule", request(0, desc("rule", "nope", "api_key", "pat")), ok, codes.InvalidArgument, nil},
		{"unknown tier", request(0, desc("rule", "per-key", "tier", "gold", "api_key", "pat")), ok, codes.InvalidArgument, nil},
		{"no descriptors", request(0), ok, codes.InvalidArgument, nil},
	})
	want := `
# HELP throttled_rls_requests_total ShouldRateLimit calls by answer: OK, OVER_LIMIT or the gRPC error code.
# TYPE throttled_rls_requests_total counter
throttled_rls_requests_total{code="InvalidArgument"} 4
throttled_rls_requests_total{code="NotFound"} 1
throttled_rls_requests_total{code="OK"} 8
throttled_rls_requests_total{code="OVER_LIMIT"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_rls_requests_total"); err != nil {
		t.Fatal(err)
	}
}

// withHits is d with its own hits_addend.
func withHits(d *ratelimitv3.RateLimitDescriptor, n uint64) *ratelimitv3.RateLimitDescriptor {
	c := proto.Clone(d).(*ratelimitv3.RateLimitDescriptor)
	c.HitsAddend = wrapperspb.UInt64(n)
	return c
}

// TestShouldRateLimitRedisDown: with Redis down the fallback decides (the
// local share of the quota) and the answer says so.
func TestShouldRateLimitRedisDown(t *testing.T) {
	fb, err := fallback.New(redisstore.New(testenv.DeadRedis(t)), fallback.Settings{Instances: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := serve(t, testEnforcer(t, fb), rls.Settings{}, nil)
	fellBack := func(t *testing.T, r *rlsv3.RateLimitResponse) {
		if meta(r, "fallback") != "true" {
			t.Errorf("metadata %v, want fallback", r.GetDynamicMetadata())
		}
	}
	pat := request(0, desc("rule", "per-key", "api_key", "pat"))
	var steps []step
	for range 5 { // premium: 5 a minute
		steps = append(steps, step{"fallback", pat, ok, codes.OK, fellBack})
	}
	run(t, c, append(steps, step{"fallback over limit", pat, over, codes.OK, fellBack}))
}

// TestShouldRateLimitStoreErrorIsUnavailable: without a fallback a store
// error is UNAVAILABLE, so that Envoy's failure_mode_deny decides.
func TestShouldRateLimitStoreErrorIsUnavailable(t *testing.T) {
	c, _ := serve(t, testEnforcer(t, redisstore.New(testenv.DeadRedis(t))), rls.Settings{}, nil)
	run(t, c, []step{{"dead store", request(0, desc("rule", "per-key", "api_key", "pat")), ok, codes.Unavailable, nil}})
}
