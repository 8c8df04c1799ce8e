package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/throttledhq/throttled/policy"
)

type fixedTop []Consumer

func (f fixedTop) TopConsumers() (policy.Duration, []Consumer) {
	return policy.Duration(time.Minute), f
}

func TestGetTop(t *testing.T) {
	top := fixedTop{{Key: "ip:192.0.2.1", Fingerprint: "ip:0a1b2c3d4e5f", Refused: 9, Error: 1},
		{Key: "sub:alice", Fingerprint: "sub:0f0e0d0c0b0a", Refused: 4}}
	f := newFixture(t, func(s *Settings) { s.Top = top })
	r := f.do("GET", "/v1/top?limit=1", readTok, nil)
	want(t, r, http.StatusOK)
	var got topList
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Window != policy.Duration(time.Minute) || len(got.Consumers) != 1 || got.Consumers[0] != top[0] {
		t.Fatalf("GET /v1/top?limit=1: %s", r.body)
	}
	want(t, f.do("GET", "/v1/top?limit=0", readTok, nil), http.StatusBadRequest)
	want(t, f.do("GET", "/v1/top", "", nil), http.StatusUnauthorized)
	empty := newFixture(t)
	r = empty.do("GET", "/v1/top", readTok, nil)
	want(t, r, http.StatusOK)
	if string(r.body) != "{\"window\":\"0s\",\"consumers\":[]}\n" {
		t.Fatalf("without a TopReader: %s", r.body)
	}
}
