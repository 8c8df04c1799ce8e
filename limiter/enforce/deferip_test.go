package enforce_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestDeferredIPWhenNeeded: the enforcer resolves a client's IP only when
// a rule's key or a refusal needs it, and then as before: a rule keyed by
// the route names its refused anonymous client by IP in the refusal log,
// and a rule keyed by client gives two anonymous clients behind two IPs a
// bucket each.
func TestDeferredIPWhenNeeded(t *testing.T) {
	var log refusalLines
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 1, Period: time.Minute, Priority: 1}},
		Rules: []enforce.Rule{
			{Name: "per-client", Path: "/c", Keys: []string{"client"}},
			{Name: "per-route", Path: "/r", Keys: []string{"route"}},
		}}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{RefusalLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	check := func(path, ip string) bool {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = ip + ":4711"
		return e.Check(context.Background(), r).Allowed
	}
	if got := []bool{check("/c", "192.0.2.1"), check("/c", "192.0.2.2"), check("/c", "192.0.2.1")}; got[0] != true ||
		got[1] != true || got[2] != false {
		t.Errorf("per-client from .1, .2, .1: allowed %v, want [true true false]", got)
	}
	if check("/r", "192.0.2.3"); check("/r", "192.0.2.4") {
		t.Error("per-route: the second request was allowed, want refused")
	}
	want := "free per-client over_quota ip:192.0.2.1,free per-route over_quota ip:192.0.2.4"
	if got := strings.Join(log.lines, ","); got != want {
		t.Errorf("refusal log %q, want %q", got, want)
	}
}
