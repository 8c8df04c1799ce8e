// Package textdiff compares two texts line by line and writes the
// difference in the unified format of diff -u, for people to read (the
// config diff of cmd/throttled). It is exact for texts of a few thousand
// changed lines; beyond that it gives a correct but coarser diff.
package textdiff

import (
	"fmt"
	"strings"
)

// Settings configures Unified. The zero value gives diff -u's output.
type Settings struct {
	// Context is how many unchanged lines surround each change. Zero means
	// 3; negative means none.
	Context int
	// Heading, if set, tells which lines head a section: the last one above
	// a hunk is shown after its @@ line, as diff -F does, without its
	// leading and trailing spaces. Nil: none.
	Heading func(line string) bool
}

// maxCells bounds the table of the exact diff (lines of a × lines of b,
// once the common beginning and end are set aside): 4 Mi cells, 16 MiB.
const maxCells = 1 << 22

// Unified returns the unified diff from a (called nameA in the header) to
// b (nameB): "" when their lines are equal (a text's last line needs no
// newline).
func Unified(nameA, nameB, a, b string, s Settings) string {
	if a == b {
		return ""
	}
	if s.Context == 0 {
		s.Context = 3
	}
	s.Context = max(s.Context, 0)
	ops := diff(lines(a), lines(b), maxCells)
	hs := hunks(ops, s.Context)
	if len(hs) == 0 {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", nameA, nameB)
	for _, h := range hs {
		writeHunk(&w, ops, h, s.Heading)
	}
	return w.String()
}

// lines splits a text into lines without their newlines.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// op is one line of the edit script: kept (' '), deleted ('-') or
// inserted ('+').
type op struct {
	kind byte
	line string
}

// diff returns an edit script from a to b with as few changed lines as
// possible, or, when the part that differs needs more than cells table
// cells, one that deletes all of it and inserts all of b's.
func diff(a, b []string, cells int) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]op, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		out = append(out, op{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if (len(ma)+1)*(len(mb)+1) <= cells {
		out = append(out, lcs(ma, mb)...)
	} else {
		for _, l := range ma {
			out = append(out, op{'-', l})
		}
		for _, l := range mb {
			out = append(out, op{'+', l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		out = append(out, op{' ', l})
	}
	return out
}

// lcs is the edit script of a longest common subsequence of a and b,
// deletions before insertions within a change.
func lcs(a, b []string) []op {
	n, m := len(a), len(b)
	// t[i*(m+1)+j] is the length of an LCS of a[i:] and b[j:].
	t := make([]int32, (n+1)*(m+1))
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*(m+1)+j] = t[(i+1)*(m+1)+j+1] + 1
			} else {
				t[i*(m+1)+j] = max(t[(i+1)*(m+1)+j], t[i*(m+1)+j+1])
			}
		}
	}
	out := make([]op, 0, n+m)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, op{' ', a[i]})
			i, j = i+1, j+1
		case j == m || i < n && t[(i+1)*(m+1)+j] >= t[i*(m+1)+j+1]:
			out = append(out, op{'-', a[i]})
			i++
		default:
			out = append(out, op{'+', b[j]})
			j++
		}
	}
	return out
}

// hunk is a range [from, to) of the edit script.
type hunk struct{ from, to int }

// hunks groups the changes of ops with ctx lines of context around each;
// changes closer than 2 × ctx share a hunk.
func hunks(ops []op, ctx int) []hunk {
	var out []hunk
	for i := 0; i < len(ops); i++ {
		if ops[i].kind == ' ' {
			continue
		}
		from := max(i-ctx, 0)
		end := i // the last change of the hunk
		for j := i + 1; j < len(ops) && j <= end+2*ctx+1; j++ {
			if ops[j].kind != ' ' {
				end = j
			}
		}
		to := min(end+ctx+1, len(ops))
		if n := len(out); n > 0 && from <= out[n-1].to {
			out[n-1].to = to
		} else {
			out = append(out, hunk{from, to})
		}
		i = end
	}
	return out
}

// writeHunk writes one hunk: its @@ line (with the heading above it, if
// any) and its lines.
func writeHunk(w *strings.Builder, ops []op, h hunk, heading func(string) bool) {
	aBefore, bBefore, head := 0, 0, ""
	for _, o := range ops[:h.from] {
		if o.kind != '+' {
			aBefore++
			if heading != nil && heading(o.line) {
				head = strings.TrimSpace(o.line)
			}
		}
		if o.kind != '-' {
			bBefore++
		}
	}
	aLen, bLen := 0, 0
	for _, o := range ops[h.from:h.to] {
		if o.kind != '+' {
			aLen++
		}
		if o.kind != '-' {
			bLen++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@", span(aBefore, aLen), span(bBefore, bLen))
	if head != "" {
		w.WriteString(" " + head)
	}
	w.WriteByte('\n')
	for _, o := range ops[h.from:h.to] {
		w.WriteByte(o.kind)
		w.WriteString(o.line)
		w.WriteByte('\n')
	}
}

// span is a hunk's range in one file as diff -u writes it: the first line
// and the count (omitted when 1); an empty range names the line before it.
func span(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}
