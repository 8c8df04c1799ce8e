package admin

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestWriteMovingUnassignedClientsWarns: with default_tier unnamed, a new
// tier of lower priority takes every unassigned and anonymous client; the
// write that does so answers with a Warning header naming the move, and
// logs it. A write that moves nobody carries no Warning.
func TestWriteMovingUnassignedClientsWarns(t *testing.T) {
	var logs testenv.SyncBuffer
	f := newFixture(t, func(s *Settings) {
		s.Initial.DefaultTier = "" // free, priority 10, is the lowest
		s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	gold := map[string]any{"name": "gold", "rate": 50, "period": "1m", "priority": 5}
	r := f.do("POST", "/v1/tiers", writeTok, gold)
	want(t, r, http.StatusCreated)
	if w := r.hdr.Get("Warning"); w != "" {
		t.Errorf("a tier above free moves nobody, yet Warning %q", w)
	}
	bronze := map[string]any{"name": "bronze", "rate": 5, "period": "1m", "priority": 20}
	r = f.do("POST", "/v1/tiers", writeTok, bronze)
	want(t, r, http.StatusCreated)
	const move = `unassigned and anonymous clients move from tier free to bronze (default_tier is not named: they take the lowest-priority tier)`
	if w := r.hdr.Get("Warning"); w != `299 throttled "`+move+`"` {
		t.Errorf("Warning %q, want one naming the move", w)
	}
	if n := strings.Count(logs.String(), move); n != 1 || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("logged %d times, want one WARN:\n%s", n, logs.String())
	}
}
