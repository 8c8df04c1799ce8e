package rls_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/limiter/rls"
	"github.com/throttledhq/throttled/limiter/rls/rlstest"
	"google.golang.org/grpc"
)

var storeSeq atomic.Int64

// redisStore is a Redis store under a prefix of its own.
func redisStore(c redis.UniversalClient) *redisstore.Store {
	return redisstore.New(c, limiter.WithPrefix(fmt.Sprintf("rls%d:", storeSeq.Add(1))))
}

// The policy of these tests: free 3/min and premium 5/min; per-key spends
// the tier quota, search has its own 2 per 10 s.
var testPolicy = enforce.Policy{
	Tiers: []enforce.Tier{
		{Name: "free", Limit: 3, Period: time.Minute, Burst: 3, Priority: 1},
		{Name: "premium", Limit: 5, Period: time.Minute, Burst: 5, Priority: 0},
	},
	Rules: []enforce.Rule{
		{Name: "per-key", Path: "/", Keys: []string{"api_key"}},
		{Name: "search", Path: "/search", Keys: []string{"api_key"}, Limit: 2, Period: 10 * time.Second},
	},
}

// multipliers is a fixed multiplier.Source.
type multipliers map[string]float64

func (m multipliers) Multiplier(tier string) float64 {
	if v, ok := m[tier]; ok {
		return v
	}
	return 1
}

type assignments map[string]string

func (a assignments) TierOf(k string) (string, bool) { t, ok := a[k]; return t, ok }

// testEnforcer decides through store: pat is premium, free is under load
// (multiplier 0.34: an admission capacity of 1 of 3).
func testEnforcer(t testing.TB, store limiter.Store) *enforce.Enforcer {
	t.Helper()
	p := testPolicy
	p.Tiers, p.Rules = slices.Clone(p.Tiers), slices.Clone(p.Rules)
	e, err := enforce.New(store, p, enforce.Settings{Tiers: assignments{"pat": "premium"},
		Multipliers: multipliers{"free": 0.34}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// serve runs a Server for c on a loopback port and returns a client of it,
// built from go-control-plane's generated stubs.
func serve(t testing.TB, c rls.Checker, s rls.Settings, reg prometheus.Registerer) (rlsv3.RateLimitServiceClient, *grpc.ClientConn) {
	t.Helper()
	srv, err := rls.New(c, s, reg)
	if err != nil {
		t.Fatal(err)
	}
	return rlstest.Serve(t, srv)
}

// desc is a descriptor of key, value pairs.
func desc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func request(hits uint32, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: rls.DefaultDomain, Descriptors: ds, HitsAddend: hits}
}

// headers are a response's headers to add, by name.
func headers(r *rlsv3.RateLimitResponse) map[string]string {
	m := map[string]string{}
	for _, h := range r.GetResponseHeadersToAdd() {
		m[h.GetKey()] = h.GetValue()
	}
	return m
}

// meta is a response's dynamic metadata field, printed.
func meta(r *rlsv3.RateLimitResponse, field string) string {
	v, ok := r.GetDynamicMetadata().GetFields()[field]
	if !ok {
		return "<none>"
	}
	return fmt.Sprint(v.AsInterface())
}
