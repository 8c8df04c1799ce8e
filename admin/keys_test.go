package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// inspector answers with the key it was asked about, or fails; it
// believes no key, and puts each in the tier "anon:" + key, so that the
// admin API's effective tier shows it came from here.
type inspector struct{ fail bool }

func (inspector) KeyTier(key string) (string, bool) { return "anon:" + key, false }

func (i inspector) Inspect(_ context.Context, key string) ([]enforce.BucketState, error) {
	if i.fail {
		return nil, errors.New("store down")
	}
	return []enforce.BucketState{{Rule: "per-key:" + key, Remaining: 7}}, nil
}

func TestKeysCRUD(t *testing.T) {
	f := newFixture(t, func(s *Settings) { s.Inspector = inspector{} })
	r := f.do("GET", "/v1/keys/k1", readTok, nil)
	want(t, r, 200)
	m := r.obj(t)
	if m["tier"] != "premium" || m["assigned"] != true || r.etag() == "" {
		t.Fatalf("GET k1: %s ETag %q", r.body, r.etag())
	}
	if b, _ := m["bucket"].([]any); len(b) != 1 || b[0].(map[string]any)["rule"] != "per-key:k1" || b[0].(map[string]any)["remaining"] != 7.0 {
		t.Fatalf("bucket: %v", m["bucket"])
	}

	// A key with '/', ':' and '%' travels escaped in the path.
	key := "per-ip:10.0.0.1/24%x"
	path := "/v1/keys/" + url.PathEscape(key)
	r = f.do("GET", path, readTok, nil)
	want(t, r, 200)
	if m := r.obj(t); m["assigned"] != false || m["effective_tier"] != "anon:"+key || m["anonymous"] != true || m["key"] != key || r.etag() != "" {
		t.Fatalf("GET unassigned: %s ETag %q", r.body, r.etag())
	}
	r = f.do("PUT", path, writeTok, `{"tier":"premium"}`)
	want(t, r, http.StatusCreated)
	tag := r.etag()
	if got := f.snapshot().Config.Assignments[key]; got != "premium" {
		t.Fatalf("stored assignment %q", got)
	}
	want(t, f.do("PUT", path, writeTok, `{"tier":"free"}`), http.StatusPreconditionRequired)
	r = f.do("PUT", path, writeTok, `{"tier":"free"}`, "If-Match", tag)
	want(t, r, 200)
	if r.obj(t)["tier"] != "free" || r.etag() == tag {
		t.Fatalf("reassign: %s", r.body)
	}
	want(t, f.do("DELETE", path, writeTok, nil, "If-Match", tag), http.StatusPreconditionFailed)
	want(t, f.do("DELETE", path, writeTok, nil, "If-Match", r.etag()), http.StatusNoContent)
	want(t, f.do("DELETE", path, writeTok, nil, "If-Match", r.etag()), http.StatusNotFound)
	if _, ok := f.snapshot().Config.Assignments[key]; ok {
		t.Fatal("assignment survived DELETE")
	}
	// If-Match on an absent assignment cannot match.
	want(t, f.do("PUT", path, writeTok, `{"tier":"free"}`, "If-Match", tag), http.StatusPreconditionFailed)
}

func TestKeyBucketError(t *testing.T) {
	f := newFixture(t, func(s *Settings) { s.Inspector = inspector{fail: true} })
	r := f.do("GET", "/v1/keys/k1", readTok, nil)
	want(t, r, 200)
	if m := r.obj(t); m["bucket_error"] != "store down" || m["bucket"] != nil {
		t.Fatalf("%s", r.body)
	}
}

func TestBadKeys(t *testing.T) {
	f := newFixture(t)
	long := make([]byte, policy.MaxKeyLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, k := range []string{string(long), "a%00b", "a%0Ab", "%E2%28%A1"} {
		r := f.do("PUT", "/v1/keys/"+k, writeTok, `{"tier":"free"}`)
		want(t, r, 400)
		if r.obj(t)["field"] != "key" {
			t.Errorf("key %.20q: %s", k, r.body)
		}
	}
}
