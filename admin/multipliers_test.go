package admin

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"
)

type multipliers []MultiplierStatus

func (m multipliers) Multipliers() []MultiplierStatus { return m }

func TestMultipliersAndPins(t *testing.T) {
	reader := multipliers{
		{Tier: "free", Multiplier: 0.25, Source: "controller", UpdatedAt: t0.Add(-3 * time.Second)},
		{Tier: "premium", Multiplier: 1, Source: "stale", UpdatedAt: t0.Add(-time.Minute)},
	}
	f := newFixture(t, func(s *Settings) { s.Multipliers = reader })
	got := listMultipliers(t, f)
	if got[0].Tier != "premium" || got[1].Tier != "free" { // by priority
		t.Fatalf("order: %+v", got)
	}
	if m := got[1]; m.Multiplier != 0.25 || m.Source != "controller" || m.Age == nil || m.Age.D() != 3*time.Second || m.Pin != nil {
		t.Fatalf("free at t0: %+v", m)
	}

	want(t, f.do("GET", "/v1/multipliers/free/pin", readTok, nil), http.StatusNotFound)
	r := f.do("POST", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.5,"ttl":"10m"}`)
	want(t, r, http.StatusCreated)
	tag := r.etag()
	g := f.do("GET", "/v1/multipliers/free/pin", readTok, nil)
	want(t, g, 200)
	if g.etag() != tag || g.obj(t)["until"] != t0.Add(10*time.Minute).Format(time.RFC3339) {
		t.Fatalf("pin: %s ETag %q want %q", g.body, g.etag(), tag)
	}
	if m := listMultipliers(t, f)[1]; m.Multiplier != 0.5 || m.Source != "pin" || m.Pin == nil {
		t.Fatalf("pinned free: %+v", m)
	}
	if p, err := f.srv.Pins(context.Background()); err != nil || p["free"].Multiplier != 0.5 || len(p) != 1 {
		t.Fatalf("Pins: %v %v", p, err)
	}

	want(t, f.do("PUT", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.2,"ttl":"1m"}`), http.StatusPreconditionRequired)
	want(t, f.do("PUT", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.2,"ttl":"1m"}`, "If-Match", tag), 200)
	testPinExpiry(t, f)
}

// testPinExpiry follows a 1-minute pin of tier free past its expiry.
func testPinExpiry(t *testing.T, f *fixture) {
	t.Helper()
	// The pin expires after its TTL: the controller's value is back.
	f.clock.Add(time.Minute)
	want(t, f.do("GET", "/v1/multipliers/free/pin", readTok, nil), http.StatusNotFound)
	if m := listMultipliers(t, f)[1]; m.Multiplier != 0.25 || m.Source != "controller" || m.Age.D() != time.Minute+3*time.Second {
		t.Fatalf("after expiry: %+v", m)
	}
	if p, _ := f.srv.Pins(context.Background()); len(p) != 0 {
		t.Fatalf("expired pin still in force: %v", p)
	}
	// An expired pin counts as absent: a new one needs no If-Match.
	r := f.do("POST", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.3,"ttl":"1h"}`)
	want(t, r, http.StatusCreated)
	want(t, f.do("DELETE", "/v1/multipliers/free/pin", writeTok, nil), http.StatusPreconditionRequired)
	want(t, f.do("DELETE", "/v1/multipliers/free/pin", writeTok, nil, "If-Match", r.etag()), http.StatusNoContent)
	want(t, f.do("DELETE", "/v1/multipliers/free/pin", writeTok, nil, "If-Match", "*"), http.StatusNotFound)
	want(t, f.do("POST", "/v1/multipliers/nope/pin", writeTok, `{"multiplier":0.3,"ttl":"1h"}`), http.StatusNotFound)
	want(t, f.do("GET", "/v1/multipliers/nope/pin", readTok, nil), http.StatusNotFound)
}

func TestMultipliersWithoutReader(t *testing.T) {
	f := newFixture(t)
	for _, m := range listMultipliers(t, f) {
		if m.Multiplier != 1 || m.Source != "none" || m.Age != nil {
			t.Fatalf("%+v", m)
		}
	}
}

func listMultipliers(t *testing.T, f *fixture) []multiplierView {
	t.Helper()
	r := f.do("GET", "/v1/multipliers", readTok, nil)
	want(t, r, 200)
	var l multiplierList
	if err := decodeStrict(r.body, &l, ""); err != nil {
		t.Fatal(err)
	}
	return l.Multipliers
}

// A multiplier JSON cannot carry is shown as invalid, not a 500.
func TestMultipliersNotFinite(t *testing.T) {
	f := newFixture(t, func(s *Settings) {
		s.Multipliers = multipliers{{Tier: "free", Multiplier: math.NaN(), Source: "controller"}}
	})
	for _, m := range listMultipliers(t, f) {
		if m.Tier == "free" && (m.Multiplier != 0 || m.Source != "invalid (controller)") {
			t.Fatalf("%+v", m)
		}
	}
}
