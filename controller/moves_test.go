package controller

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// logLines decodes the JSON log lines whose msg is msg.
func logLines(t *testing.T, out, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

func jsonLogger(buf *testenv.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// A cut logs one INFO line naming the tier, both multipliers, the action
// and the signal that drove it with its value and target; the tick after,
// held by the cool-down, logs none.
func TestLoopLogsEveryMultiplierChange(t *testing.T) {
	h := newHarness(2) // tick 0 cuts free 1 → 0.5; tick 1 (5 s later) holds: cool-down 9 s
	var buf testenv.SyncBuffer
	l := h.loop(t, nil, WithLogger(jsonLogger(&buf)))
	h.run(t, l)
	lines := logLines(t, buf.String(), msgMultiplierChanged)
	if len(lines) != 1 {
		t.Fatalf("%d %q lines, want 1 (the cut; none for the hold):\n%s", len(lines), msgMultiplierChanged, buf.String())
	}
	want := map[string]any{"level": "INFO", "tier": "free", "from": 1.0, "to": 0.5, "action": "decrease",
		"signal": "latency_p99", "value": 2.0, "target": 1.0, "reason": "decrease: latency_p99 2s > target 1s"}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, lines[0][k], v, lines[0])
		}
	}
	// The publication carries the reason and since of every tier that moved.
	last := h.pub.published[len(h.pub.published)-1]
	if got := last.Reasons["free"]; got != "decrease: latency_p99 2s > target 1s" {
		t.Errorf("published reason %q", got)
	}
	if got := last.Since["free"]; !got.Equal(t0) {
		t.Errorf("published since %v, want %v (the cut, not the hold)", got, t0)
	}
	if _, ok := last.Reasons["premium"]; ok {
		t.Errorf("premium never moved but has a reason: %q", last.Reasons["premium"])
	}
}

// A follower shadows the law but moves nothing: it logs no change.
func TestLoopFollowerLogsNoChange(t *testing.T) {
	h := newHarness(2)
	h.lease.acquire = always(false, nil)
	var buf testenv.SyncBuffer
	l := h.loop(t, nil, WithLogger(jsonLogger(&buf)))
	h.run(t, l)
	if lines := logLines(t, buf.String(), msgMultiplierChanged); len(lines) != 0 {
		t.Fatalf("follower logged %d changes: %v", len(lines), lines)
	}
}

// Each move says why in words: the action, the signal with its value and
// its target, or how long no signal was usable.
func TestMoveReasons(t *testing.T) {
	law := mustLaw(t, threeTiers())
	lat := func(v float64) Input {
		return Input{Signals: []Signal{{Name: "latency_p99", Value: v, Target: 0.25, Valid: true}}}
	}
	st := law.Step(law.Init(t0), lat(0.82), t0)
	free := st.Tiers[2]
	if free.Reason != "decrease: latency_p99 0.82s > target 0.25s" || !free.Since.Equal(t0) {
		t.Fatalf("cut: reason %q since %v", free.Reason, free.Since)
	}
	st = law.Step(st, lat(0.05), t0.Add(20*time.Second))
	if got := st.Tiers[2].Reason; got != "increase: latency_p99 0.05s < target 0.25s" {
		t.Fatalf("raise: reason %q", got)
	}
	held := law.Step(st, lat(0.24), t0.Add(25*time.Second)) // in the band: hold
	if held.Tiers[2].Reason != st.Tiers[2].Reason || !held.Tiers[2].Since.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("hold changed the reason to %q since %v", held.Tiers[2].Reason, held.Tiers[2].Since)
	}
	st = law.Step(law.Step(law.Init(t0), lat(0.82), t0), Input{}, t0.Add(40*time.Second))
	if got := st.Tiers[2].Reason; got != "recover: no usable signal for 40s" {
		t.Fatalf("recovery: reason %q", got)
	}
	sat := Input{Signals: []Signal{{Name: "saturation", Value: 0.3, Target: 0.1, Valid: true, Keep: 0.7}}}
	if got := law.Step(law.Init(t0), sat, t0).Tiers[2].Reason; got != "decrease: saturation 0.3 > target 0.1" {
		t.Fatalf("saturation cut: reason %q", got)
	}
	// A signal over its target that asks to keep all the load still names it.
	all := Input{Signals: []Signal{{Name: "saturation", Value: 0.3, Target: 0.1, Valid: true, Keep: 1}}}
	if got := law.Step(law.Init(t0), all, t0).Tiers[2].Reason; got != "decrease: saturation 0.3 > target 0.1" {
		t.Fatalf("cut keeping all: reason %q", got)
	}
}

// A new law whose bounds move a tier's multiplier says so: the tier's
// reason and since change with it, and the leader logs the change.
func TestNewBoundsExplained(t *testing.T) {
	h := newHarness(2)
	h.src.read = func(_ int, now time.Time) (Input, error) { // in the band: the law holds
		return Input{Signals: []Signal{{Name: "latency_p99", Value: 0.9, Target: 1, Valid: true, At: now}}}, nil
	}
	var buf testenv.SyncBuffer
	l := h.loop(t, nil, WithLogger(jsonLogger(&buf)))
	st := l.State()
	st.Tiers[2].Multiplier = 0.2 // free, in priority order
	l.state = st
	s := threeTiers()
	s.Tiers[0].Floor = 0.4
	if err := l.SetLaw(mustLaw(t, s)); err != nil {
		t.Fatal(err)
	}
	h.run(t, l)
	free := l.State().Tiers[2]
	if free.Multiplier != 0.4 || free.Reason != "hold: floor 0.4, ceiling 1" || !free.Since.Equal(t0) {
		t.Fatalf("free after the new floor: %+v", free)
	}
	lines := logLines(t, buf.String(), msgMultiplierChanged)
	if len(lines) != 1 || lines[0]["from"] != 0.2 || lines[0]["to"] != 0.4 || lines[0]["action"] != "hold" || lines[0]["reason"] != free.Reason {
		t.Fatalf("logged %v, want one line 0.2 → 0.4 for the bounds", lines)
	}
}
