package enforce

import "strings"

// Path is a path pattern, matched by segments as a prefix: "/" matches
// every path, "/api" matches "/api" and "/api/x" but not "/apix", a
// ":name" segment matches any one segment and "*" matches the rest. Rules
// and the sidecar's per-route bulkheads and breakers all match with it.
type Path struct {
	pattern  string
	segments []string // pattern split on "/"
}

// ParsePath compiles a pattern; slashes at either end are not significant.
func ParsePath(pattern string) Path {
	p := Path{pattern: pattern}
	if t := strings.Trim(pattern, "/"); t != "" {
		p.segments = strings.Split(t, "/")
	}
	return p
}

// String is the pattern as given.
func (p Path) String() string { return p.pattern }

// Match reports whether path falls under the pattern. It does not allocate.
func (p Path) Match(path string) bool {
	rest := strings.TrimPrefix(path, "/")
	for _, seg := range p.segments {
		if seg == "*" {
			return true
		}
		if rest == "" {
			return false
		}
		cur, tail, _ := strings.Cut(rest, "/")
		if seg[0] != ':' && seg != cur {
			return false
		}
		rest = tail
	}
	return true
}

// Routes are patterns of which a path takes the most specific that matches.
type Routes []Path

// NewRoutes compiles patterns.
func NewRoutes(patterns []string) Routes {
	r := make(Routes, len(patterns))
	for i, p := range patterns {
		r[i] = ParsePath(p)
	}
	return r
}

// Of is the pattern of the most specific route that path matches (the one
// with the most segments; on a tie, the first given), or def when none does.
func (r Routes) Of(path, def string) string {
	best, n := def, -1
	for _, p := range r {
		if len(p.segments) > n && p.Match(path) {
			best, n = p.pattern, len(p.segments)
		}
	}
	return best
}
