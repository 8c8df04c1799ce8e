package bench

import (
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/overload"
)

// TestDemoLineWithout2xx: a second without a 2xx shows no p99 ("-", not
// 0s), and no admitted share for a load that sent nothing.
func TestDemoLineWithout2xx(t *testing.T) {
	var shed overload.Counts
	shed.Class[overload.Capped] = 7
	line := viewLine("  3s surge", "0.50", map[string]*overload.Counts{"free": &shed}, &shed, 50)
	f := strings.Fields(line)
	if got := f[len(f)-1]; got != "-" {
		t.Errorf("p99 %q in %q, want -", got, line)
	}
	if !strings.Contains(line, "│    -   0%    - │") {
		t.Errorf("admitted shares in %q, want - for premium and greedy, 0%% for free", line)
	}
}
