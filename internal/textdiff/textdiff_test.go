package textdiff

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			if s != "" {
				b.WriteString(s + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		s          Settings
		want       string
	}{
		{name: "equal", a: "x\ny\n", b: "x\ny\n", want: ""},
		{name: "equal but the final newline", a: "x\ny", b: "x\ny\n", want: ""},
		{name: "one line changed in the middle", a: numbered(9, nil), b: numbered(9, map[int]string{5: "five"}),
			want: "--- a\n+++ b\n@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+five\n l6\n l7\n l8\n"},
		{name: "insert at the start", a: "x\n", b: "new\nx\n",
			want: "--- a\n+++ b\n@@ -1 +1,2 @@\n+new\n x\n"},
		{name: "delete the last line", a: "x\ny\n", b: "x\n",
			want: "--- a\n+++ b\n@@ -1,2 +1 @@\n x\n-y\n"},
		{name: "from empty", a: "", b: "x\n",
			want: "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n"},
		{name: "far apart changes make two hunks", a: numbered(20, nil), b: numbered(20, map[int]string{2: "two", 18: "eighteen"}),
			want: "--- a\n+++ b\n@@ -1,5 +1,5 @@\n l1\n-l2\n+two\n l3\n l4\n l5\n" +
				"@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+eighteen\n l19\n l20\n"},
		{name: "changes 6 apart share a hunk", a: numbered(12, nil), b: numbered(12, map[int]string{3: "three", 10: "ten"}),
			want: "--- a\n+++ b\n@@ -1,12 +1,12 @@\n l1\n l2\n-l3\n+three\n l4\n l5\n l6\n l7\n l8\n l9\n-l10\n+ten\n l11\n l12\n"},
		{name: "no context", a: numbered(5, nil), b: numbered(5, map[int]string{3: ""}), s: Settings{Context: -1},
			want: "--- a\n+++ b\n@@ -3 +2,0 @@\n-l3\n"},
		{name: "heading above the hunk", a: "tiers:\n  a: 1\n  b: 2\n  c: 3\n  d: 4\n  e: 5\nrules: []\n",
			b:    "tiers:\n  a: 1\n  b: 2\n  c: 3\n  d: 4\n  e: 6\nrules: []\n",
			s:    Settings{Context: 1, Heading: func(l string) bool { return !strings.HasPrefix(l, " ") }},
			want: "--- a\n+++ b\n@@ -5,3 +5,3 @@ tiers:\n   d: 4\n-  e: 5\n+  e: 6\n rules: []\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("a", "b", tc.a, tc.b, tc.s); got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Beyond the table bound the script replaces the differing middle whole,
// still keeping the common beginning and end.
func TestDiffCoarseBeyondBound(t *testing.T) {
	a := []string{"same", "a1", "x", "a2", "end"}
	b := []string{"same", "b1", "x", "b2", "end"}
	var got strings.Builder
	for _, o := range diff(a, b, 4) {
		got.WriteString(string(o.kind) + o.line + "|")
	}
	if want := " same|-a1|-x|-a2|+b1|+x|+b2| end|"; got.String() != want {
		t.Fatalf("coarse script %s, want %s", got.String(), want)
	}
	got.Reset()
	for _, o := range diff(a, b, maxCells) {
		got.WriteString(string(o.kind) + o.line + "|")
	}
	if want := " same|-a1|+b1| x|-a2|+b2| end|"; got.String() != want {
		t.Fatalf("exact script %s, want %s", got.String(), want)
	}
}

func ExampleUnified() {
	store := "tiers:\n  free:\n    rate: 10\n    period: 1s\n"
	file := "tiers:\n  free:\n    rate: 3\n    period: 1s\n"
	fmt.Print(Unified("store", "throttled.yaml", store, file, Settings{}))
	// Output:
	// --- store
	// +++ throttled.yaml
	// @@ -1,4 +1,4 @@
	//  tiers:
	//    free:
	// -    rate: 10
	// +    rate: 3
	//      period: 1s
}
