package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/policy"
)

// TestInspectKeyCreatesNoState: GET /v1/keys/{key} for a key never seen
// shows a full bucket and writes nothing to Redis.
func TestInspectKeyCreatesNoState(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	probe := redisstore.New(nil, limiter.WithPrefix("throttled:")).Bucket(limiter.TokenBucket, "__ready__")
	keys := func() []string {
		k, err := r.Client().Keys(context.Background(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(k)
		return slices.DeleteFunc(k, func(s string) bool { // the instances' own bookkeeping
			return strings.Contains(s, "instances") || strings.Contains(s, "controller") || strings.Contains(s, "multipliers") ||
				strings.HasSuffix(s, ":tally") || // the instances' admitted counts
				s == probe // the readiness check's own probe bucket
		})
	}
	before := keys()
	resp, body := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/v1/keys/never-seen", "", "Authorization", "Bearer "+testenv.WriteToken)
	if resp.StatusCode != 200 || !strings.Contains(body, `"rule":"per-key"`) || !strings.Contains(body, `"remaining":5`) {
		t.Fatalf("GET /v1/keys/never-seen: %d %s, want its per-key bucket, full (5)", resp.StatusCode, body)
	}
	if after := keys(); !slices.Equal(before, after) {
		t.Fatalf("inspecting a key changed Redis: keys %v, then %v", before, after)
	}
}

// TestTopConsumers: a refused client shows in GET /v1/top under its key,
// and in /metrics only as a fingerprint.
func TestTopConsumers(t *testing.T) {
	up := testenv.Upstream(t)
	cfg := configtest.Serve(t, up.URL, "")
	cfg.Rules = []policy.Rule{{Name: "per-ip", Match: policy.Match{Path: "/"}, Key: policy.KeySources{"ip"}}}
	addrs := startServe(t, cfg)
	for range 8 {
		testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "") // no API key: the client is its IP
	}
	resp, body := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/v1/top", "", "Authorization", "Bearer "+testenv.WriteToken)
	fp := instrument.Fingerprint("ip:127.0.0.1")
	if resp.StatusCode != 200 || !strings.Contains(body, `"key":"ip:127.0.0.1","fingerprint":"`+fp+`","refused":3`) {
		t.Fatalf("GET /v1/top: %d %s, want ip:127.0.0.1 refused 3 times", resp.StatusCode, body)
	}
	_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	top := testenv.GrepLines(metrics, "throttled_top_consumers{")
	if top != `throttled_top_consumers{key="`+fp+`"} 3` {
		t.Fatalf("/metrics top consumers:\n%s\nwant the fingerprint %s alone", top, fp)
	}
}
