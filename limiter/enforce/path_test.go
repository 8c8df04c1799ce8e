package enforce_test

import (
	"testing"

	"github.com/throttledhq/throttled/limiter/enforce"
)

func TestPathMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/", true},
		{"/", "/anything/at/all", true},
		{"/api", "/api", true},
		{"/api", "/api/x", true},
		{"/api/", "/api/x", true},
		{"/api", "/apix", false},
		{"/api", "/", false},
		{"/users/:id", "/users/7", true},
		{"/users/:id", "/users", false},
		{"/users/:id/posts", "/users/7/posts/1", true},
		{"/users/:id/posts", "/users/7/likes", false},
		{"/static/*", "/static/a/b.css", true},
		{"/static/*", "/other", false},
	} {
		if got := enforce.ParsePath(tc.pattern).Match(tc.path); got != tc.want {
			t.Errorf("ParsePath(%q).Match(%q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func TestRoutesOf(t *testing.T) {
	routes := enforce.NewRoutes([]string{"/api", "/api/export", "/", "/users/:id"})
	for path, want := range map[string]string{
		"/api": "/api", "/api/x": "/api", "/api/export/1": "/api/export", "/apix": "/", "/": "/",
		"/users/7": "/users/:id", "/users": "/",
	} {
		if got := routes.Of(path, "default"); got != want {
			t.Errorf("Of(%q) = %q, want %q", path, got, want)
		}
	}
	if got := enforce.NewRoutes([]string{"/api"}).Of("/x", "default"); got != "default" {
		t.Errorf("unmatched: %q", got)
	}
}

func BenchmarkPathMatch(b *testing.B) {
	p := enforce.ParsePath("/users/:id/posts")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match("/users/7/posts/1") {
			b.Fatal("no match")
		}
	}
}
