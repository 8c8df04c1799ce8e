package instrument_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// TestRefusalLogRateLimits: at most rate lines a second at fixed instants
// t0..t3 of a fake clock; the first line after suppressed ones counts
// them; the key is a fingerprint, never the key itself.
func TestRefusalLogRateLimits(t *testing.T) {
	var buf bytes.Buffer
	clock := fakeclock.New(t0)
	l := instrument.NewRefusalLog(slog.New(slog.NewJSONHandler(&buf, nil)), 2, clock.Now)
	steps := []struct {
		at    time.Duration
		calls int
		lines int // written at this instant
	}{
		{0, 5, 2},                      // t0: 2 written, 3 suppressed
		{500 * time.Millisecond, 1, 0}, // t1: same second: suppressed (4)
		{time.Second, 3, 2},            // t2: a new second: 2 written, the first says 4 suppressed
		{3 * time.Second, 1, 1},        // t3: 1 written, says 1 suppressed
	}
	var lines []map[string]any
	for i, s := range steps {
		clock.Set(t0.Add(s.at))
		buf.Reset()
		for range s.calls {
			l.Refused("free", "per-key", "over_quota", "ip:192.0.2.7")
		}
		got := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if buf.Len() == 0 {
			got = nil
		}
		if len(got) != s.lines {
			t.Fatalf("t%d: %d lines, want %d:\n%s", i, len(got), s.lines, buf.String())
		}
		for _, g := range got {
			var m map[string]any
			if err := json.Unmarshal([]byte(g), &m); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(g, "192.0.2.7") {
				t.Fatalf("t%d: raw key logged: %s", i, g)
			}
			lines = append(lines, m)
		}
	}
	fp := instrument.Fingerprint("ip:192.0.2.7")
	wantSuppressed := []any{nil, nil, 4.0, nil, 1.0}
	for i, m := range lines {
		if m["level"] != "INFO" || m["msg"] != "request refused" || m["rule"] != "per-key" || m["tier"] != "free" ||
			m["reason"] != "over_quota" || m["key"] != fp || m["suppressed"] != wantSuppressed[i] {
			t.Errorf("line %d: %v; want info, rule per-key, tier free, reason over_quota, key %s, suppressed %v", i, m, fp, wantSuppressed[i])
		}
	}
}

func TestRefusalLogWithoutClient(t *testing.T) {
	var buf bytes.Buffer
	l := instrument.NewRefusalLog(slog.New(slog.NewJSONHandler(&buf, nil)), 0, nil)
	l.Refused("free", "tier:free", "bulkhead", "")
	if s := buf.String(); strings.Contains(s, `"key"`) || !strings.Contains(s, `"reason":"bulkhead"`) {
		t.Fatalf("line %s: want reason bulkhead and no key", s)
	}
}

func TestEffectiveMultipliers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	cur := []instrument.Effective{{"free", 0.3, instrument.SourcePin}, {"premium", 1, instrument.SourceStale}}
	reg.MustRegister(instrument.NewEffectiveMultipliers(func() []instrument.Effective { return cur }))
	want := `
# HELP throttled_effective_multiplier Multiplier this instance enforces on each tier, by source: controller, pin (admin API), stale (the controller's are too old: 1) or none (none received yet: 1).
# TYPE throttled_effective_multiplier gauge
throttled_effective_multiplier{source="pin",tier="free"} 0.3
throttled_effective_multiplier{source="stale",tier="premium"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_effective_multiplier"); err != nil {
		t.Fatal(err)
	}
	cur = []instrument.Effective{{"free", 0.5, instrument.SourceController}}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`
# HELP throttled_effective_multiplier Multiplier this instance enforces on each tier, by source: controller, pin (admin API), stale (the controller's are too old: 1) or none (none received yet: 1).
# TYPE throttled_effective_multiplier gauge
throttled_effective_multiplier{source="controller",tier="free"} %v
`, 0.5)), "throttled_effective_multiplier"); err != nil {
		t.Fatalf("after the pin ended: %v", err)
	}
}
