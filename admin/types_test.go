package admin

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// The admin API's types that configuration and output share have json and
// yaml tags alike, as the document's do (policy's TestTags).
func TestTags(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[MultiplierStatus](), reflect.TypeFor[Token]()} {
		for _, f := range reflect.VisibleFields(typ) {
			if js, _, _ := strings.Cut(f.Tag.Get("json"), ","); js == "" || js != strings.ToLower(js) ||
				f.Tag.Get("yaml") != f.Tag.Get("json") {
				t.Errorf("%v.%s: json %q yaml %q", typ, f.Name, f.Tag.Get("json"), f.Tag.Get("yaml"))
			}
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	f := newFixture(t)
	before := f.raw()
	big := `{"name":"x","rate":1,"period":"1s","algorithm":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`
	r := f.do("POST", "/v1/tiers", writeTok, big)
	want(t, r, http.StatusRequestEntityTooLarge)
	if m := r.obj(t); m["field"] != "body" || !strings.Contains(m["error"].(string), "1048576") {
		t.Fatalf("%s", r.body)
	}
	// Without Content-Length the limit holds while reading.
	r = f.do("PUT", "/v1/rules", writeTok, io.MultiReader(strings.NewReader(big)), "If-Match", "*")
	want(t, r, http.StatusRequestEntityTooLarge)
	if string(f.raw()) != string(before) {
		t.Fatal("store changed")
	}
}
