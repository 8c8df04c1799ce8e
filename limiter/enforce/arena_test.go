package enforce

import (
	"strconv"
	"strings"
	"testing"
)

// TestArenaStringsStay: the strings an arena hands out keep their text
// while it goes on writing, past its room and through each time it grows.
func TestArenaStringsStay(t *testing.T) {
	s := newScratch()
	var got, want []string
	for i := range 100 { // ~1 KB: several times the room
		start := s.len()
		s.buf = append(s.buf, "part-"...)
		s.buf = strconv.AppendInt(s.buf, int64(i), 10)
		got = append(got, s.from(start))
		want = append(want, "part-"+strconv.Itoa(i))
		got = append(got, s.int(int64(i)*7919))
		want = append(want, strconv.Itoa(i*7919))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("string %d: %q, want %q", i, got[i], want[i])
		}
	}
	if e := s.from(s.len()); e != "" {
		t.Fatalf("from the end: %q, want \"\"", e)
	}
	if all := strings.Join(want, ""); string(s.buf) != all {
		t.Fatalf("arena holds %q, want %q", s.buf, all)
	}
}
