package admin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/enforce"
)

// GET /v1/multipliers says why each tier last moved and since when, its
// age as people write one ("4.5s"), and the source in the words of
// throttled_effective_multiplier.
func TestMultipliersReasonSinceAge(t *testing.T) {
	since := t0.Add(-90 * time.Second)
	reader := multipliers{{Tier: "free", Multiplier: 0.05, Source: "controller", UpdatedAt: t0.Add(-4524232514),
		Reason: "decrease: latency 0.82s > target 0.25s", Since: since}}
	f := newFixture(t, func(s *Settings) { s.Multipliers = reader })
	r := f.do("GET", "/v1/multipliers", readTok, nil)
	want(t, r, 200)
	body := string(r.body)
	for _, s := range []string{`"tier":"free"`, `"source":"controller"`, `"age":"4.5s"`,
		`"reason":"decrease: latency 0.82s \u003e target 0.25s"`, `"since":"` + since.Format(time.RFC3339) + `"`} {
		if !strings.Contains(body, s) {
			t.Errorf("GET /v1/multipliers lacks %s:\n%s", s, body)
		}
	}
	// Pinned, the pin is the reason; since is when the controller moved it.
	want(t, f.do("POST", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.5,"ttl":"10m"}`), http.StatusCreated)
	if m := listMultipliers(t, f)[1]; m.Source != "pin" || m.Reason != "pinned until "+t0.Add(10*time.Minute).Format(time.RFC3339) {
		t.Fatalf("pinned: %+v", m)
	}
}

// Ages are rounded to what tells: milliseconds under a second, tenths of
// a second under a minute, whole seconds beyond.
func TestAgeRounding(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1234567 * time.Nanosecond: "1ms", 4524232514: "4.5s", 61*time.Second + 600*time.Millisecond: "1m2s",
		3*time.Hour + 400*time.Millisecond: "3h",
	} {
		if got := age(d).String(); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}

// bucketInspector reports one bucket of a 1-second period.
type bucketInspector struct{ inspector }

func (bucketInspector) Inspect(context.Context, string) ([]enforce.BucketState, error) {
	return []enforce.BucketState{{Rule: "per-key", Tier: "premium", Algorithm: "gcra", Limit: 10,
		Period: time.Second, Remaining: 7, ResetAfter: 250 * time.Millisecond}}, nil
}

// GET /v1/keys/{key} writes a bucket's durations as tiers write theirs.
func TestKeyBucketDurations(t *testing.T) {
	f := newFixture(t, func(s *Settings) { s.Inspector = bucketInspector{} })
	r := f.do("GET", "/v1/keys/k1", readTok, nil)
	want(t, r, 200)
	b, _ := r.obj(t)["bucket"].([]any)
	if len(b) != 1 {
		t.Fatalf("bucket: %s", r.body)
	}
	got := b[0].(map[string]any)
	if got["period"] != "1s" || got["reset_after"] != "250ms" || got["limit"] != 10.0 || got["remaining"] != 7.0 {
		t.Fatalf("bucket %v, want period 1s and reset_after 250ms", got)
	}
	if _, ok := got["period_ns"]; ok || strings.Contains(string(r.body), "_ns") {
		t.Fatalf("bucket still in nanoseconds: %s", r.body)
	}
}

// A method a known path does not serve answers 405 with Allow; an unknown
// path stays 404.
func TestUnsupportedMethodIs405(t *testing.T) {
	f := newFixture(t)
	for path, allow := range map[string]string{
		"/v1/tiers/free": "DELETE, GET, PUT", "/v1/keys/k1": "DELETE, GET, PUT", "/v1/tiers": "GET, POST",
		"/v1/multipliers": "GET",
	} {
		r := f.do("PATCH", path, writeTok, `{}`)
		want(t, r, http.StatusMethodNotAllowed)
		if got := r.hdr.Get("Allow"); got != allow {
			t.Errorf("PATCH %s: Allow %q, want %q", path, got, allow)
		}
		if e := r.obj(t)["error"]; e != "method PATCH not allowed on "+path+"; allowed: "+allow {
			t.Errorf("PATCH %s: error %q", path, e)
		}
	}
	want(t, f.do("GET", "/v1/nothing", readTok, nil), http.StatusNotFound)
	want(t, f.do("PATCH", "/v1/tiers/free", "", `{}`), http.StatusUnauthorized) // auth first: no map of the API for strangers
}

// A pin's TTL out of bounds names them as people write them.
func TestPinTTLBoundMessage(t *testing.T) {
	f := newFixture(t)
	r := f.do("POST", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.5,"ttl":"1000h"}`)
	want(t, r, http.StatusBadRequest)
	if e := r.obj(t)["error"]; e != "pins.free.ttl: 1000h: want 1s..30d" {
		t.Fatalf("error %q", e)
	}
}

// Read-only resources answer an unserved method 405 too, not 409.
func TestUnsupportedMethodIs405WhenReadOnly(t *testing.T) {
	f := newFixture(t, func(s *Settings) {
		s.ReadOnly = func(string) error { return errors.New("the configuration file owns it") }
	})
	r := f.do("PATCH", "/v1/tiers/free", writeTok, `{}`)
	want(t, r, http.StatusMethodNotAllowed)
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{}`), http.StatusConflict)
}
