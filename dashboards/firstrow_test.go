package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled/internal/testenv"
)

// seen counts the answers clients got, by tier and by the reason a
// client reads from them: admitted (2xx), over_quota (429), the JSON
// refusal's reason of a 503 (tier_cap and concurrency by its rule), or
// upstream_error (another 5xx).
type seen struct {
	mu sync.Mutex
	n  map[[2]string]float64 // tier, reason
}

func (s *seen) add(tier, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[[2]string{tier, reason}]++
}

// share is the share of all answers (of tier, when not "") whose reason
// is among reasons; and the answers counted.
func (s *seen) share(tier string, reasons ...string) (float64, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var part, all float64
	for k, v := range s.n {
		if tier != "" && k[0] != tier {
			continue
		}
		all += v
		for _, r := range reasons {
			if k[1] == r {
				part += v
			}
		}
	}
	return part / all, all
}

// reasonOf reads an answer as its client does.
func reasonOf(resp *http.Response) string {
	switch {
	case resp.StatusCode < 300:
		return "admitted"
	case resp.StatusCode == http.StatusTooManyRequests:
		return "over_quota"
	case resp.StatusCode != http.StatusServiceUnavailable:
		return "upstream_error"
	}
	var ref struct{ Reason, Rule string }
	_ = json.NewDecoder(resp.Body).Decode(&ref)
	switch {
	case ref.Reason == "shed" && ref.Rule == "tier_admission":
		return "tier_cap"
	case ref.Reason == "shed" && ref.Rule == "concurrency":
		return "concurrency"
	}
	return ref.Reason
}

// driveSeen sends each client's burst every 100 ms for ticks ticks and
// counts what the clients saw in s (tier by key in tiers).
func driveSeen(t *testing.T, proxy string, clients []client, tiers map[string]string, ticks int, s *seen) {
	hc := &http.Client{Timeout: 5 * time.Second}
	burstsEvery(context.Background(), clients, ticks, func(cl client) {
		req, _ := http.NewRequest(http.MethodGet, proxy+"/", nil)
		req.Header.Set("X-API-Key", cl.key)
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s: %v", cl.key, err)
			return
		}
		s.add(tiers[cl.key], reasonOf(resp))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
}

// scrapeAfter waits for the first scrape of throttled after at (its
// samples' timestamp), bounded.
func scrapeAfter(t *testing.T, api v1.API, at time.Time) time.Time {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		v, err := instant(api, fmt.Sprintf(`timestamp(up{job=%q})`, testenv.DefaultJob))
		if err == nil && len(v) == 1 {
			if ts := time.UnixMilli(int64(float64(v[0].Value) * 1000)); ts.After(at) {
				return ts
			}
		}
	}
	t.Fatalf("no scrape after %v", at)
	return time.Time{}
}

// TestFirstRowTellsTheTruth drives a known mix through a real `throttled
// serve` proxy (two rules per request, premium pinned to 0.3), with a real
// Prometheus scraping it, and evaluates the Overview's first row over
// exactly the window of the mix: requests/s, the refused share, the
// upstream's error share, the refused share by reason and by tier must be
// what the clients saw, within 2 % (the issue saw 31.9 % where clients got
// 72 %); the multipliers in force are the pin's.
func TestFirstRowTellsTheTruth(t *testing.T) {
	in := startThrottled(t, upstream(t).URL, "")
	prom := testenv.StartPrometheusWith(t, testenv.PrometheusConfig{Targets: []string{in.adminAddr}})
	tiers := map[string]string{"free-a": "free", "premium-a": "premium"}
	for k, tier := range tiers {
		assign(t, in, k, tier)
	}
	pin(t, in, "premium", 0.3)
	clients := []client{{"free-a", 4}, {"premium-a", 5}}
	api := prom.API()

	// every series the mix makes exists before the window opens.
	driveSeen(t, in.proxy, clients, tiers, 20, &seen{n: map[[2]string]float64{}})
	from := scrapeAfter(t, api, time.Now().Add(500*time.Millisecond))
	got := &seen{n: map[[2]string]float64{}}
	driveSeen(t, in.proxy, clients, tiers, 100, got)
	to := scrapeAfter(t, api, time.Now().Add(500*time.Millisecond))
	window := fmt.Sprintf("[%dms]", to.Sub(from).Milliseconds()+1) // (from, to]: from's sample in it
	t.Logf("clients saw %v over %v", got.n, to.Sub(from))

	at := func(expr string) model.Vector {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, _, _, err := api.Query(ctx, expr, to)
		if err != nil {
			t.Fatalf("%v\n  expr: %s", err, expr)
		}
		return v.(model.Vector)
	}
	eval := func(panel, refID string) model.Vector {
		return at(strings.ReplaceAll(panelQuery(t, panel, refID), "[15s]", window))
	}
	near := func(what string, v model.Vector, want model.LabelSet, expect float64, tolerance float64) {
		t.Helper()
		s, ok := series(v, want)
		switch {
		case !ok:
			t.Errorf("%s: no series %v in %v", what, want, v)
		case math.Abs(float64(s.Value)-expect) > tolerance:
			t.Errorf("%s %v: %.4f, want what the clients saw, %.4f (±%.2f)", what, want, float64(s.Value), expect, tolerance)
		}
	}
	refused := []string{"over_quota", "shed", "tier_cap", "concurrency", "bulkhead", "breaker_open"}
	share, total := got.share("", refused...)
	if share < 0.3 {
		t.Fatalf("the mix refused only %.2f: it must refuse much to be a test", share)
	}
	near("Requests/s", eval("Requests/s", "A"), model.LabelSet{}, total/to.Sub(from).Seconds(), 0.02*total/to.Sub(from).Seconds())
	near("Refused share", eval("Refused share", "A"), model.LabelSet{}, share, 0.02)
	errShare, _ := got.share("", "upstream_error")
	near("Upstream error share", eval("Upstream error share", "A"), model.LabelSet{}, errShare, 0.02)
	byReason := eval("Refused share by reason", "A")
	for _, r := range refused {
		if s, _ := got.share("", r); s > 0 {
			near("Refused share by reason", byReason, model.LabelSet{"reason": model.LabelValue(r)}, s, 0.02)
		}
	}
	for _, tier := range []string{"free", "premium"} {
		s429, _ := got.share(tier, "over_quota")
		near("Refused share by tier 429", eval("Refused share by tier (429 vs 503)", "A"), model.LabelSet{"tier": model.LabelValue(tier)}, s429, 0.02)
		s503, _ := got.share(tier, refused[1:]...)
		near("Refused share by tier 503", eval("Refused share by tier (429 vs 503)", "B"), model.LabelSet{"tier": model.LabelValue(tier)}, s503, 0.02)
	}
	if v := at(`sum(rate(throttled_decisions_total{decision=~"(fallback_)?(over_quota|shed)|bulkhead|breaker_open"}` + window +
		`)) / sum(rate(throttled_decisions_total` + window + `))`); len(v) == 1 {
		t.Logf("the refused share read from throttled_decisions_total (the previous first row): %.4f; clients saw %.4f", float64(v[0].Value), share)
	}
	mults := eval("Multipliers in force by tier", "A")
	near("Multipliers in force", mults, model.LabelSet{"tier": "premium"}, 0.3, 1e-9)
	near("Multipliers in force", mults, model.LabelSet{"tier": "free"}, 1, 1e-9)
}
