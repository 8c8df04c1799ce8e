package config

import (
	"fmt"
	"sort"
	"strings"
)

// Finding is one problem of a configuration, an error or a warning, at a
// YAML path ("tiers.free.rate"). It is on a line of the file, or came from
// a flag or an environment variable (origin), or from neither (a default).
type Finding struct {
	line   int    // 0: not from the file
	origin string // "--listen", "THROTTLED_LISTEN"; "" for the file
	path   string
	msg    string
	warn   bool
}

func (f Finding) String() string {
	var b strings.Builder
	if f.warn {
		b.WriteString("warning: ")
	}
	switch {
	case f.origin != "":
		fmt.Fprintf(&b, "%s: ", f.origin)
	case f.line > 0:
		fmt.Fprintf(&b, "line %d: ", f.line)
	}
	if f.path != "" {
		b.WriteString(f.path + ": ")
	}
	b.WriteString(f.msg)
	return b.String()
}

// Report is every Finding of a configuration, errors and warnings. As an
// error it lists them one a line.
type Report []Finding

// sort orders r by line (findings in the file first), then by origin and
// path, keeping the order of equal ones.
func (r Report) sort() {
	sort.SliceStable(r, func(i, j int) bool {
		a, b := r[i], r[j]
		if (a.line == 0) != (b.line == 0) {
			return a.line != 0
		}
		if a.line != b.line {
			return a.line < b.line
		}
		if a.origin != b.origin {
			return a.origin < b.origin
		}
		return a.path < b.path
	})
}

// errors counts the findings that are errors.
func (r Report) Errors() int {
	n := 0
	for _, f := range r {
		if !f.warn {
			n++
		}
	}
	return n
}

// warnings returns the findings that are warnings.
func (r Report) Warnings() Report {
	var out Report
	for _, f := range r {
		if f.warn {
			out = append(out, f)
		}
	}
	return out
}

func (r Report) Error() string {
	lines := make([]string, len(r))
	for i, f := range r {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// summary is "2 errors, 1 warning".
func (r Report) Summary() string {
	return plural(r.Errors(), "error") + ", " + plural(len(r)-r.Errors(), "warning")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
