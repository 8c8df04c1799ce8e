package fallback_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
)

// TestFallbackEpisodeLogged: a stalled Redis starts an episode of fallback
// decisions, logged once with its cause however many decisions it makes;
// the first shared decision after SIGCONT ends it, logged once with the
// count of fallback decisions and its length. Before, an instance could
// answer thousands of decisions from its fallback without a log line.
func TestFallbackEpisodeLogged(t *testing.T) {
	r := testenv.StartRedis(t)
	var logs testenv.SyncBuffer
	f := newFallback(t, fbStore(r.DeadlineClient(0)), fallback.Settings{Guard: fbBreaker(t, "redis"),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, nil)
	rule := limiter.Rule{Limit: 1000, Period: time.Minute, Burst: 1000}
	decide := func() limiter.Decision {
		d, err := f.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := decide(); d.Fallback {
		t.Fatalf("healthy store: %+v", d)
	}
	r.Pause()
	fallbacks := 0
	for range 20 {
		if decide().Fallback {
			fallbacks++
		}
	}
	r.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for decide().Fallback {
		fallbacks++
		if time.Now().After(deadline) {
			t.Fatal("no shared decision within 10 s of SIGCONT")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var started, ended []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch msg, _ := m["msg"].(string); {
		case strings.Contains(msg, "the shared store failed"):
			started = append(started, m)
		case strings.Contains(msg, "answers again"):
			ended = append(ended, m)
		}
	}
	if len(started) != 1 || len(ended) != 1 {
		t.Fatalf("%d start and %d end lines, want one each:\n%s", len(started), len(ended), logs.String())
	}
	if c, _ := started[0]["cause"].(string); c == "" || started[0]["level"] != "WARN" {
		t.Errorf("start line %v: want WARN with the cause", started[0])
	}
	if n, _ := ended[0]["fallback_decisions"].(float64); int(n) != fallbacks {
		t.Errorf("end line %v: fallback_decisions %v, want %d (the decisions the fallback made)", ended[0], n, fallbacks)
	}
	if d, err := time.ParseDuration(ended[0]["duration"].(string)); err != nil || d <= 0 {
		t.Errorf("end line %v: want the episode's length", ended[0])
	}
}
