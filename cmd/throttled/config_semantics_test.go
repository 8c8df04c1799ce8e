package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
)

// TestControllerOnlyReplicaDoesNotHeartbeat: a replica without a proxy does
// not enforce, so it is not one of the instances that share a quota while
// Redis is down: only the enforcing instance heartbeats.
func TestControllerOnlyReplicaDoesNotHeartbeat(t *testing.T) {
	r := testenv.StartRedis(t)
	ctl := configtest.Serve(t, "", r.URL())
	startServe(t, ctl)
	testenv.WaitFor(t, 10*time.Second, "the controller-only replica leads", func() bool {
		return r.Client().Exists(context.Background(), coord.Settings{Prefix: "throttled:"}.LeaseKey()).Val() == 1
	})
	up := testenv.Upstream(t)
	enf := configtest.Serve(t, up.URL, r.URL())
	enf.Controller.Disabled = true
	addrs := startServe(t, enf)
	testenv.WaitFor(t, 10*time.Second, "the enforcer heartbeats", func() bool {
		return r.Client().ZCard(context.Background(), "throttled:instances").Val() >= 1
	})
	if resp, _ := testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k"); resp.StatusCode != http.StatusOK {
		t.Fatalf("enforcer: %d", resp.StatusCode)
	}
	if n := r.Client().ZCard(context.Background(), "throttled:instances").Val(); n != 1 {
		t.Fatalf("%d instances heartbeat, want 1 (the enforcer; the controller-only replica enforces nothing)", n)
	}
}
