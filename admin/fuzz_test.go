package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// fuzzTargets are the endpoints that take a body; the fuzzer's first byte
// picks one. "If-Match: *" lets bodies reach validation of existing
// resources too.
var fuzzTargets = []struct{ method, path, ifMatch string }{
	{"POST", "/v1/tiers", ""},
	{"PUT", "/v1/tiers/free", "*"},
	{"PUT", "/v1/keys/k1", "*"},
	{"PUT", "/v1/keys/new", ""},
	{"PUT", "/v1/rules", "*"},
	{"POST", "/v1/multipliers/free/pin", ""},
	{"PUT", "/v1/multipliers/premium/pin", "*"},
}

// FuzzAdminBodies sends arbitrary bodies to every endpoint that takes one:
// never a 5xx, never a panic, errors always JSON naming what is wrong, and
// whatever is accepted leaves a valid stored config.
func FuzzAdminBodies(f *testing.F) {
	for i, b := range []string{
		`{"name":"gold","rate":5,"period":"1s","burst":10,"algorithm":"gcra","priority":3,"alpha":0.2,"beta":0.5,"floor":0.1,"ceiling":1}`,
		`{"rate":1e3,"period":"1h"}`,
		`{"tier":"premium"}`,
		`{"tier":"free"}`,
		`{"rules":[{"name":"a","match":{"path":"/a","methods":["GET"]},"key":["ip","header:X"],"limit":5,"period":"1s","mode":"delay","max_wait":"1s"}]}`,
		`{"multiplier":0.5,"ttl":"10m"}`,
		`{"multiplier":1,"ttl":"1s"}`,
	} {
		f.Add(byte(i), []byte(b))
	}
	rd := testenv.StartRedis(f)
	st, err := policy.NewRedisStore(rd.Client(), policy.StoreSettings{})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(context.Background(), Settings{Store: st, Tokens: testTokens(), Initial: testConfig(), MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target byte, body []byte) {
		tg := fuzzTargets[int(target)%len(fuzzTargets)]
		req := httptest.NewRequest(tg.method, tg.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+writeTok)
		if tg.ifMatch != "" {
			req.Header.Set("If-Match", tg.ifMatch)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		checkFuzzResponse(t, w, st)
	})
}

func checkFuzzResponse(t *testing.T, w *httptest.ResponseRecorder, st policy.Store) {
	t.Helper()
	if w.Code >= 500 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if w.Code >= 400 {
		var e errorBody
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
			t.Fatalf("status %d with a body that is not a JSON error: %q", w.Code, w.Body)
		}
		if w.Code == http.StatusBadRequest && e.Field == "" {
			t.Fatalf("400 without a field: %s", w.Body)
		}
		return
	}
	if _, err := policy.Load(context.Background(), st); err != nil {
		t.Fatalf("status %d left an invalid stored config: %v", w.Code, err)
	}
}
