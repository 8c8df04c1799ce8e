package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestInspectKeyCreatesNoState: GET /v1/keys/{key} for a key never seen
// shows a full bucket and writes nothing to Redis.
func TestInspectKeyCreatesNoState(t *testing.T) {
	r := testenv.StartRedis(t)
	up := upstreamServer(t)
	addrs := startServe(t, testConfig(t, up.URL, r.URL()))
	keys := func() []string {
		k, err := r.Client().Keys(context.Background(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(k)
		return slices.DeleteFunc(k, func(s string) bool { // the instances' own bookkeeping
			return strings.Contains(s, "instances") || strings.Contains(s, "controller") || strings.Contains(s, "multipliers")
		})
	}
	before := keys()
	resp, body := call(t, "GET", "http://"+addrs["admin"]+"/v1/keys/never-seen", "", "Authorization", "Bearer "+testToken)
	if resp.StatusCode != 200 || !strings.Contains(body, `"rule":"per-key"`) || !strings.Contains(body, `"remaining":5`) {
		t.Fatalf("GET /v1/keys/never-seen: %d %s, want its per-key bucket, full (5)", resp.StatusCode, body)
	}
	if after := keys(); !slices.Equal(before, after) {
		t.Fatalf("inspecting a key changed Redis: keys %v, then %v", before, after)
	}
}

