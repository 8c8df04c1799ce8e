package controller

import (
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// The inner loop's limit changes every 100 ms here; the log summarises
// them at most once a second: from, to, how many changes, the lowest and
// highest limit, the baseline and the latency.
func TestConcurrencyLimitChangesSummarisedOncePerSecond(t *testing.T) {
	var windows []Window
	for i := range 25 {
		if i%2 == 0 {
			windows = append(windows, win(10, 20*ms, 20)) // fast: the limit grows
		} else {
			windows = append(windows, win(10, 80*ms, 20)) // slow: it shrinks
		}
	}
	gate := &fakeGate{windows: windows}
	var buf testenv.SyncBuffer
	l, _, ctx := newConcurrencyHarness(t, 25, gate, nil, WithLimitLog(jsonLogger(&buf)))
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	changes := 0
	for i := 1; i < len(gate.limits); i++ {
		if gate.limits[i] != gate.limits[i-1] {
			changes++
		}
	}
	if changes < 20 {
		t.Fatalf("the script changed the limit only %d times in 24 ticks: %v", changes, gate.limits)
	}
	// 24 ticks, 100 ms apart: lines at the first change (t0+100ms), then
	// t0+1.1s and t0+2.1s; the changes after that wait for the next second.
	lines := logLines(t, buf.String(), msgLimitChanged)
	if len(lines) != 3 {
		t.Fatalf("%d summary lines for %d changes in 2.4 s, want 3:\n%s", len(lines), changes, buf.String())
	}
	first := lines[0]
	if first["loop"] != "upstream" || first["from"] != 20.0 || first["to"] != float64(gate.limits[1]) || first["changes"] != 1.0 {
		t.Errorf("first summary %v, want upstream 20 → %d after 1 change", first, gate.limits[1])
	}
	// Every change up to the last line (tick 21, t0+2.1s) is counted once.
	summed, upTo21 := 0, 0
	for _, ln := range lines {
		n, _ := ln["changes"].(float64)
		summed += int(n)
		if ln["level"] != "INFO" || ln["min"] == nil || ln["max"] == nil || ln["baseline"] == nil || ln["latency"] == nil {
			t.Errorf("summary %v: want min, max, baseline and latency", ln)
		}
	}
	for i := 1; i <= 21; i++ {
		if gate.limits[i] != gate.limits[i-1] {
			upTo21++
		}
	}
	if summed != upTo21 || lines[2]["to"] != float64(gate.limits[21]) {
		t.Errorf("the summaries count %d changes and end at %v, want %d ending at %d (limits %v)",
			summed, lines[2]["to"], upTo21, gate.limits[21], gate.limits)
	}
}

// A limit that holds logs nothing.
func TestConcurrencyLimitHoldLogsNothing(t *testing.T) {
	gate := &fakeGate{} // empty windows: the law holds
	var buf testenv.SyncBuffer
	l, _, ctx := newConcurrencyHarness(t, 20, gate, nil, WithLimitLog(jsonLogger(&buf)))
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if lines := logLines(t, buf.String(), msgLimitChanged); len(lines) != 0 {
		t.Fatalf("a holding limit logged %v", lines)
	}
}
