package config

import (
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestConfigHeadroom: an explicit headroom of 0 is refused (it used to
// become the default 0.1 silently); unset means the law's default; a value
// reaches the law, from the file or the environment.
func TestConfigHeadroom(t *testing.T) {
	withHeadroom := func(v string) string { return testenv.ReadmeConfig + "controller:\n  headroom: " + v + "\n" }
	if _, err := Parse([]byte(withHeadroom("0")), nil); err == nil || !strings.Contains(err.Error(), "controller.headroom") {
		t.Fatalf("headroom 0: err %v, want an error at controller.headroom", err)
	}
	for _, tc := range []struct {
		src     string
		environ []string
		want    float64
	}{
		{testenv.ReadmeConfig, nil, 0}, // 0: the law's default
		{withHeadroom("0.3"), nil, 0.3},
		{testenv.ReadmeConfig, []string{"THROTTLED_CONTROLLER_HEADROOM=0.2"}, 0.2},
	} {
		c, err := Parse([]byte(tc.src), tc.environ)
		if err != nil {
			t.Fatal(err)
		}
		if got := ControllerSettings(c, c.Tiers).Headroom; got != tc.want {
			t.Errorf("%v: law headroom %v, want %v", tc.environ, got, tc.want)
		}
	}
}

// TestConfigSignalStaleAfter: the controller's signal staleness has its own
// knob, apart from the enforcers' multiplier staleness (stale_after).
func TestConfigSignalStaleAfter(t *testing.T) {
	c, err := Parse([]byte(testenv.ReadmeConfig+"controller:\n  signal_stale_after: 40s\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ControllerSettings(c, c.Tiers).SignalStaleAfter; got != 40*time.Second {
		t.Fatalf("law SignalStaleAfter %v, want 40s", got)
	}
	plain, err := Parse([]byte(testenv.ReadmeConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Controller.MultiplierStaleAfter != plain.Controller.MultiplierStaleAfter {
		t.Fatalf("stale_after %v moved with signal_stale_after (%v without)", c.Controller.MultiplierStaleAfter,
			plain.Controller.MultiplierStaleAfter)
	}
}
