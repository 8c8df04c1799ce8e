package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/limiter/rls"
	"github.com/throttledhq/throttled/limiter/rls/rlstest"
)

// A gateway is a front that asks throttled for the decision and serves
// the app itself: Envoy with the rate limit service, or a gateway that
// asks POST /v1/check (Traefik's forwardAuth, Kong, nginx). It runs the
// decision stages only (handles is false), through the fixture's Enforcer
// on a real loopback listener.
//
// Its route table mirrors the policy, as its operator writes it: a request
// asks for every rule whose path (and methods) it matches, keyed by its
// X-API-Key. A path no rule matches is not asked about at all: the
// gateway forwards it as it is. On "allowed" it forwards the request to
// the app and puts the decision's headers on the app's answer, in place
// of the app's same-named ones. On a refusal it answers the decision's
// status, headers and JSON body (the fields of enforce.Refusal) itself.
type gateway struct {
	label string
	// connect serves e's decisions for the test's time and returns a
	// client of them.
	connect func(f *fixture) decider
}

// decider asks for the rules' decision for a client key.
type decider func(ctx context.Context, rules []string, key string) verdict

// verdict is a decision as the gateway reads it: status 200 forwards the
// request; any other is the answer.
type verdict struct {
	status int
	header http.Header // the decision's headers: the rate-limit ones, Content-Type of a body
	body   []byte
}

var (
	checkGateway = gateway{label: "check", connect: checkService}
	rlsGateway   = gateway{label: "rls", connect: rlsService}
)

func (g gateway) name() string { return g.label }
func (gateway) handles() bool  { return false }

func (g gateway) serve(f *fixture, _ *pipeline.Pipeline, app http.Handler) http.Handler {
	ask := g.connect(f)
	rules := f.policy.Rules
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var names []string
		for _, rule := range rules {
			if enforce.ParsePath(rule.Path).Match(r.URL.Path) &&
				(len(rule.Methods) == 0 || slices.Contains(rule.Methods, r.Method)) {
				names = append(names, rule.Name)
			}
		}
		if len(names) == 0 { // an unruled path: not asked about
			app.ServeHTTP(w, r)
			return
		}
		v := ask(r.Context(), names, r.Header.Get("X-API-Key"))
		if v.status != http.StatusOK {
			maps.Copy(w.Header(), v.header)
			w.WriteHeader(v.status)
			_, _ = w.Write(v.body)
			return
		}
		hw := &withHeaders{ResponseWriter: w, h: v.header}
		app.ServeHTTP(hw, r)
		hw.put()
	})
}

// withHeaders puts h on the answer, in place of the handler's headers of
// the same names, as the answer's headers go out.
type withHeaders struct {
	http.ResponseWriter
	h    http.Header
	done bool
}

func (w *withHeaders) put() {
	if !w.done {
		w.done = true
		maps.Copy(w.Header(), w.h)
	}
}

func (w *withHeaders) WriteHeader(status int) { w.put(); w.ResponseWriter.WriteHeader(status) }

func (w *withHeaders) Write(b []byte) (int, error) { w.put(); return w.ResponseWriter.Write(b) }

func (w *withHeaders) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// decisionHeaders are the headers of a decision that a gateway passes on
// to its client.
var decisionHeaders = []string{enforce.HeaderLimit, enforce.HeaderRemaining, enforce.HeaderReset,
	enforce.HeaderPolicy, enforce.HeaderRateLimit, enforce.HeaderRetryAfter, enforce.HeaderDecision}

// checkService serves e's CheckHandler as POST /v1/check and asks it one
// check per rule ({"rule","key"}, or several in "checks"). Its answer is
// the verdict: status, the decision's headers, Content-Type and the
// CheckAnswer body, which holds a refusal's fields. A check that cannot be
// asked lets the request through (the gateway fails open).
func checkService(f *fixture) decider {
	t := f.t
	mux := http.NewServeMux()
	mux.Handle("POST /v1/check", f.s.Enforcer.CheckHandler(f.s.Requests))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return func(ctx context.Context, rules []string, key string) verdict {
		var body any = enforce.Query{Rule: rules[0], Key: key}
		if len(rules) > 1 {
			qs := make([]enforce.Query, len(rules))
			for i, rule := range rules {
				qs[i] = enforce.Query{Rule: rule, Key: key}
			}
			body = enforce.CheckRequest{Checks: qs}
		}
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/check", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Errorf("check: %v", err)
			return verdict{status: http.StatusOK}
		}
		defer resp.Body.Close()
		v := verdict{status: resp.StatusCode, header: http.Header{}}
		v.body, err = io.ReadAll(resp.Body)
		if err != nil || v.status != http.StatusOK && v.status != http.StatusTooManyRequests &&
			v.status != http.StatusServiceUnavailable {
			t.Errorf("check: %d %s (%v)", v.status, v.body, err)
			return verdict{status: http.StatusOK}
		}
		for _, n := range decisionHeaders {
			if vs := resp.Header.Values(n); len(vs) > 0 {
				v.header[http.CanonicalHeaderKey(n)] = vs
			}
		}
		if v.status != http.StatusOK {
			v.header.Set("Content-Type", resp.Header.Get("Content-Type"))
		}
		return v
	}
}

// rlsService serves e as the rate limit service (domain "throttled") and
// asks it as Envoy's ratelimit filter does, one descriptor per rule with
// the entries rule and api_key. The verdict of OK is 200 with the
// response's headers to add; of OVER_LIMIT 429, or 503 when
// HeaderDecision says shed, with those headers and a body made of the
// dynamic metadata (decision, rule, tier) and Retry-After. An error lets
// the request through, as Envoy does unless failure_mode_deny.
func rlsService(f *fixture) decider {
	t, client := f.t, serveRLS(f)
	return func(ctx context.Context, rules []string, key string) verdict {
		req := &rlsv3.RateLimitRequest{Domain: rls.DefaultDomain}
		for _, rule := range rules {
			req.Descriptors = append(req.Descriptors, &ratelimitv3.RateLimitDescriptor{
				Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: rls.EntryRule, Value: rule}, {Key: "api_key", Value: key}}})
		}
		resp, err := client.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Errorf("ShouldRateLimit: %v", err)
			return verdict{status: http.StatusOK}
		}
		v := verdict{status: http.StatusOK, header: http.Header{}}
		for _, h := range resp.GetResponseHeadersToAdd() {
			v.header.Add(h.GetKey(), h.GetValue())
		}
		if resp.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			return v
		}
		v.status = http.StatusTooManyRequests
		if v.header.Get(enforce.HeaderDecision) == "shed" {
			v.status = http.StatusServiceUnavailable
		}
		meta := resp.GetDynamicMetadata().GetFields()
		after, _ := strconv.ParseInt(v.header.Get(enforce.HeaderRetryAfter), 10, 64)
		v.body, err = json.Marshal(enforce.Refusal{Error: strings.ToLower(http.StatusText(v.status)),
			Reason: meta["decision"].GetStringValue(), RetryAfterSeconds: after,
			Tier: meta["tier"].GetStringValue(), Rule: meta["rule"].GetStringValue()})
		if err != nil {
			t.Fatal(err)
		}
		v.header.Set("Content-Type", "application/json")
		return v
	}
}

// serveRLS serves f's Enforcer as the rate limit service on a loopback
// port until the test ends, and returns a client of it.
func serveRLS(f *fixture) rlsv3.RateLimitServiceClient {
	srv, err := rls.New(f.s.Enforcer, rls.Settings{Requests: f.s.Requests}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	c, _ := rlstest.Serve(f.t, srv)
	return c
}
