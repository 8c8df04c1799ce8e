package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/policy"
)

func TestTiersCRUD(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/tiers", readTok, nil)
	want(t, r, 200)
	if got := string(r.body); !strings.Contains(got, `"name":"free"`) || !strings.Contains(got, `"name":"premium"`) || r.etag() == "" {
		t.Fatalf("list: %s (ETag %q)", got, r.etag())
	}

	gold := map[string]any{"name": "gold", "rate": 50, "period": "1m", "burst": 60, "algorithm": "leaky_bucket", "priority": 0, "beta": 0.9}
	r = f.do("POST", "/v1/tiers", writeTok, gold)
	want(t, r, http.StatusCreated)
	created := r.etag()
	if r.hdr.Get("Location") != "/v1/tiers/gold" || created == "" {
		t.Fatalf("create: Location %q ETag %q", r.hdr.Get("Location"), created)
	}
	want(t, f.do("POST", "/v1/tiers", writeTok, gold), http.StatusConflict)

	r = f.do("GET", "/v1/tiers/gold", readTok, nil)
	want(t, r, 200)
	if r.etag() != created || r.obj(t)["period"] != "1m" || r.obj(t)["rate"] != 50.0 {
		t.Fatalf("get: ETag %q (created %q) body %s", r.etag(), created, r.body)
	}
	want(t, f.do("GET", "/v1/tiers/nope", readTok, nil), http.StatusNotFound)

	gold["rate"] = 70
	want(t, f.do("PUT", "/v1/tiers/gold", writeTok, gold), http.StatusPreconditionRequired)
	want(t, f.do("PUT", "/v1/tiers/gold", writeTok, gold, "If-Match", `"stale"`), http.StatusPreconditionFailed)
	r = f.do("PUT", "/v1/tiers/gold", writeTok, gold, "If-Match", created)
	want(t, r, 200)
	replaced := r.etag()
	if replaced == created || f.snapshot().Config.Tiers["gold"].Rate != 70 {
		t.Fatalf("replace: ETag %q (was %q), stored %+v", replaced, created, f.snapshot().Config.Tiers["gold"])
	}
	// The old ETag no longer works.
	want(t, f.do("DELETE", "/v1/tiers/gold", writeTok, nil, "If-Match", created), http.StatusPreconditionFailed)
	want(t, f.do("DELETE", "/v1/tiers/gold", writeTok, nil), http.StatusPreconditionRequired)
	want(t, f.do("DELETE", "/v1/tiers/gold", writeTok, nil, "If-Match", replaced), http.StatusNoContent)
	want(t, f.do("GET", "/v1/tiers/gold", readTok, nil), http.StatusNotFound)
	want(t, f.do("PUT", "/v1/tiers/gold", writeTok, gold, "If-Match", "*"), http.StatusNotFound)
	want(t, f.do("DELETE", "/v1/tiers/gold", writeTok, nil, "If-Match", "*"), http.StatusNotFound)
}

// A write that restores earlier content still changes the ETag, so a client
// holding the first ETag cannot overwrite the change it never saw.
func TestTierETagChangesOnEveryWrite(t *testing.T) {
	f := newFixture(t)
	first := f.do("GET", "/v1/tiers/free", readTok, nil).etag()
	orig := f.do("GET", "/v1/tiers/free", readTok, nil).obj(t)
	changed := map[string]any{"rate": 11, "period": "1s"}
	r := f.do("PUT", "/v1/tiers/free", writeTok, changed, "If-Match", first)
	want(t, r, 200)
	r = f.do("PUT", "/v1/tiers/free", writeTok, orig, "If-Match", r.etag())
	want(t, r, 200)
	if r.etag() == first {
		t.Fatalf("ETag %q repeated after A→B→A", first)
	}
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, changed, "If-Match", first), http.StatusPreconditionFailed)
	// "*" matches whatever exists.
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, changed, "If-Match", "*"), 200)
	// One of several listed ETags is enough.
	cur := f.do("GET", "/v1/tiers/free", readTok, nil).etag()
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, orig, "If-Match", `"x", `+cur), 200)
}

// TestDeleteUnmatchedTierIsRefused: unmatched_tier is a reference too.
func TestDeleteUnmatchedTierIsRefused(t *testing.T) {
	f := newFixture(t, func(s *Settings) { s.Initial.UnmatchedTier = "premium"; s.Initial.Assignments = nil })
	tag := f.do("GET", "/v1/tiers/premium", readTok, nil).etag()
	r := f.do("DELETE", "/v1/tiers/premium", writeTok, nil, "If-Match", tag)
	want(t, r, http.StatusConflict)
	if r.obj(t)["field"] != "unmatched_tier" {
		t.Fatalf("DELETE premium: %s, want 409 naming unmatched_tier", r.body)
	}
}

func TestDeleteReferencedTierIsRefused(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ tier, field string }{
		{"free", "default_tier"},
		{"premium", "assignments.k1"},
	} {
		tag := f.do("GET", "/v1/tiers/"+c.tier, readTok, nil).etag()
		before := f.raw()
		r := f.do("DELETE", "/v1/tiers/"+c.tier, writeTok, nil, "If-Match", tag)
		want(t, r, http.StatusConflict)
		if r.obj(t)["field"] != c.field {
			t.Errorf("DELETE %s: %s, want field %s", c.tier, r.body, c.field)
		}
		if string(f.raw()) != string(before) {
			t.Errorf("DELETE %s changed the stored config", c.tier)
		}
	}
	// Unassign k1, then premium can go, taking its pin with it.
	want(t, f.do("POST", "/v1/multipliers/premium/pin", writeTok, `{"multiplier":0.5,"ttl":"1h"}`), http.StatusCreated)
	k1 := f.do("GET", "/v1/keys/k1", readTok, nil).etag()
	want(t, f.do("DELETE", "/v1/keys/k1", writeTok, nil, "If-Match", k1), http.StatusNoContent)
	tag := f.do("GET", "/v1/tiers/premium", readTok, nil).etag()
	want(t, f.do("DELETE", "/v1/tiers/premium", writeTok, nil, "If-Match", tag), http.StatusNoContent)
	if s := f.snapshot(); len(s.Pins) != 0 || s.Config.Tiers["premium"] != (policy.Tier{}) {
		t.Fatalf("after delete: pins %v tiers %v", s.Pins, s.Config.Tiers)
	}
}

func TestPutTierNameMustMatchURL(t *testing.T) {
	f := newFixture(t)
	tag := f.do("GET", "/v1/tiers/free", readTok, nil).etag()
	r := f.do("PUT", "/v1/tiers/free", writeTok, `{"name":"other","rate":1,"period":"1s"}`, "If-Match", tag)
	want(t, r, 400)
	if r.obj(t)["field"] != "tiers.free.name" {
		t.Fatalf("%s", r.body)
	}
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"name":"free","rate":1,"period":"1s"}`, "If-Match", tag), 200)
}
