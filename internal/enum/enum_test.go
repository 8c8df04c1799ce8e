package enum_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/enum"
)

type color uint8

var colors = enum.New[color]("paint", "color", "red", "green", "blue")

func TestNames(t *testing.T) {
	for i, want := range []string{"red", "green", "blue"} {
		if got := colors.String(color(i)); got != want {
			t.Errorf("String(%d) = %q, want %q", i, got, want)
		}
		v, err := colors.Parse(want)
		if err != nil || v != color(i) {
			t.Errorf("Parse(%q) = %d, %v; want %d", want, v, err, i)
		}
	}
	if got := colors.String(7); got != "color(7)" {
		t.Errorf("String(7) = %q", got)
	}
	_, err := colors.Parse("pink")
	if err == nil || err.Error() != `paint: unknown color "pink" (want red, green or blue)` {
		t.Errorf("Parse(pink) error = %v", err)
	}
	if colors.Len() != 3 || colors.Valid(3) || !colors.Valid(2) {
		t.Error("Len/Valid wrong")
	}
}
