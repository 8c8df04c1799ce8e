package admin

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/throttledhq/throttled/policy"
)

func TestRulesGetPut(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/rules", readTok, nil)
	want(t, r, 200)
	tag := r.etag()
	if string(r.body) != `{"rules":[{"name":"api","match":{"path":"/api"},"key":["api_key"]}]}`+"\n" {
		t.Fatalf("GET: %s", r.body)
	}
	body := `{"rules":[
	  {"name":"login","match":{"path":"/login","methods":["POST"]},"key":"ip","limit":5,"period":"1m","mode":"delay","max_wait":"2s","fallback":"deny"},
	  {"name":"api","match":{"path":"/api/:id"},"key":["api_key","header:X-Tenant"],"cost":2,"mode":"shadow"}]}`
	want(t, f.do("PUT", "/v1/rules", writeTok, body), http.StatusPreconditionRequired)
	r = f.do("PUT", "/v1/rules", writeTok, body, "If-Match", tag)
	want(t, r, 200)
	wantRules := []policy.Rule{
		{Name: "login", Match: policy.Match{Path: "/login", Methods: []string{"POST"}}, Key: policy.KeySources{"ip"}, Limit: 5,
			Period: policy.Duration(time.Minute), Mode: "delay", MaxWait: sec(2), Fallback: "deny"},
		{Name: "api", Match: policy.Match{Path: "/api/:id"}, Key: policy.KeySources{"api_key", "header:X-Tenant"}, Cost: 2, Mode: "shadow"},
	}
	if got := f.snapshot().Config.Rules; !reflect.DeepEqual(got, wantRules) {
		t.Fatalf("stored rules\n got %+v\nwant %+v", got, wantRules)
	}
	if g := f.do("GET", "/v1/rules", readTok, nil); g.etag() != r.etag() || g.etag() == tag {
		t.Fatalf("ETag after PUT %q, GET %q, before %q", r.etag(), g.etag(), tag)
	}
	want(t, f.do("PUT", "/v1/rules", writeTok, body, "If-Match", tag), http.StatusPreconditionFailed)
	// An empty list is a valid replacement.
	r = f.do("PUT", "/v1/rules", writeTok, `{"rules":[]}`, "If-Match", r.etag())
	want(t, r, 200)
	if string(r.body) != `{"rules":[]}`+"\n" || len(f.snapshot().Config.Rules) != 0 {
		t.Fatalf("empty: %s", r.body)
	}
}
