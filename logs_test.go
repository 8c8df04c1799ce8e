package throttled

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/signals"
)

// TestServeLogsPrometheusQueries: at start serve logs the queries it
// steers by, the defaults filtered by the selector.
func TestServeLogsPrometheusQueries(t *testing.T) {
	cfg := configtest.Serve(t, "", "")
	cfg.Prometheus.URL, cfg.Prometheus.Selector = "http://127.0.0.1:9", `job="checkout"`
	var logs testenv.SyncBuffer
	s, err := New(context.Background(), cfg, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	line := testenv.GrepLines(logs.String(), `"signals: prometheus"`)
	for _, q := range []string{signals.LatencyQuery(`job="checkout"`), signals.ErrorRatioQuery(`job="checkout"`)} {
		if !strings.Contains(line, strings.ReplaceAll(q, `"`, `\"`)) {
			t.Errorf("start log %q lacks the query %s", line, q)
		}
	}
}

// TestRedisWatchObserve drives the outage log at fixed instants: one line
// when Redis fails, a reminder a minute later with the folded count, one
// line when it is back, and folding only while it is down.
func TestRedisWatchObserve(t *testing.T) {
	var logs testenv.SyncBuffer
	w := newRedisWatch(&config.RedisConfig{URL: "redis://:secret@10.0.0.7:6379/0"}, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	folding := w.logger()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	refused := errors.New("connection refused")
	for i, tc := range []struct {
		at     time.Duration
		err    error
		warns  int    // warnings logged by the parts that use Redis just after
		logged string // the new line from the watch; "" none
	}{
		{0, nil, 1, ""},
		{time.Second, refused, 0, "redis at 10.0.0.7:6379 unreachable, check redis.url"},
		{2 * time.Second, refused, 5, ""},
		{30 * time.Second, refused, 2, ""},
		{61 * time.Second, refused, 0, `still unreachable, check redis.url; serving on the local fallback","for":"1m0s","folded_warnings":7`},
		{62 * time.Second, refused, 1, ""},
		{90 * time.Second, nil, 1, `redis at 10.0.0.7:6379 is back: shared quotas and the admin API resume","down_for":"1m29s","folded_warnings":1`},
		{91 * time.Second, nil, 0, ""},
	} {
		before := logs.String()
		w.observe(tc.err, t0.Add(tc.at))
		added := strings.TrimPrefix(logs.String(), before)
		if tc.logged == "" && added != "" || tc.logged != "" && (!strings.Contains(added, tc.logged) || strings.Count(added, "\n") != 1) {
			t.Errorf("t%d: logged %q, want %q", i, added, tc.logged)
		}
		before = logs.String()
		for range tc.warns {
			folding.Warn("admin config", "err", "boom")
		}
		passed := strings.Count(strings.TrimPrefix(logs.String(), before), "\n")
		if wantPassed := map[bool]int{true: 0, false: tc.warns}[w.down.Load()]; passed != wantPassed {
			t.Errorf("t%d: %d of %d warnings logged, want %d", i, passed, tc.warns, wantPassed)
		}
	}
	if strings.Contains(logs.String(), "secret") {
		t.Error("the Redis password was logged")
	}
}
