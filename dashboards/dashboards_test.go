package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// histograms are the product's histograms: they expose _bucket, _sum and
// _count series.
var histograms = map[string]bool{
	"throttled_decision_duration_seconds":         true,
	"throttled_upstream_request_duration_seconds": true,
	"throttled_admitted_request_duration_seconds": true,
}

// productMetrics are the metric names throttled exports (the contract the
// dashboards and rules are written against).
var productMetrics = map[string]bool{
	// every request (gateway check) once, as its client saw the answer;
	// the limits in force per tier and rule.
	"throttled_requests_total": true,
	"throttled_limit":          true,

	"throttled_decisions_total":                   true,
	"throttled_decision_duration_seconds":         true,
	"throttled_store_errors_total":                true,
	"throttled_top_consumers":                     true,
	"throttled_tier_multiplier":                   true,
	"throttled_effective_multiplier":              true,
	"throttled_controller_signal_seconds":         true,
	"throttled_controller_signal_ratio":           true,
	"throttled_controller_signal_target_seconds":  true,
	"throttled_controller_signal_target_ratio":    true,
	"throttled_controller_steps_total":            true,
	"throttled_controller_leader":                 true,
	"throttled_controller_cpu_wait_ratio":         true,
	"throttled_controller_instances":              true,
	"throttled_controller_instance_factors":       true,
	"throttled_breaker_state":                     true,
	"throttled_bulkhead_inflight":                 true,
	"throttled_bulkhead_rejected_total":           true,
	"throttled_fallback_active":                   true,
	"throttled_signals_reads_total":               true,
	"throttled_multiplier_age_seconds":            true,
	"throttled_upstream_requests_total":           true,
	"throttled_upstream_request_duration_seconds": true,

	// the enforcer's controller.stale_after, exported by the multiplier
	// subscriber next to the age (ThrottledMultipliersStale compares them).
	"throttled_multiplier_stale_after_seconds": true,

	// admitted decisions that left their key near its limit.
	"throttled_near_limit_total": true,

	// 1 while the config file and the store differ (ThrottledConfigDrift).
	"throttled_config_drift": true,

	// the lease table of lease rules: its keys and evictions at its bound.
	"throttled_lease_keys":            true,
	"throttled_lease_evictions_total": true,

	// the inner loop: the gate in front of the upstream and its law.
	"throttled_concurrency_limit":                 true,
	"throttled_concurrency_saturation":            true,
	"throttled_bulkhead_shed_total":               true,
	"throttled_inner_loop_steps_total":            true,
	"throttled_inner_loop_relearns_total":         true,
	"throttled_inner_loop_baseline_seconds":       true,
	"throttled_inner_loop_latency_seconds":        true,
	"throttled_admitted_request_duration_seconds": true,

	// the instance: build, configuration, readiness, Redis's memory policy.
	"throttled_build_info":                true,
	"throttled_config_version":            true,
	"throttled_config_store_resets_total": true,
	"throttled_degraded":                  true,
	"throttled_redis_memory_policy_risk":  true,

	// the edges: admin API, Envoy's rate limit service (rls.listen only),
	// X-Forwarded-For from peers not trusted.
	"throttled_admin_requests_total":               true,
	"throttled_admin_write_conflicts_total":        true,
	"throttled_rls_requests_total":                 true,
	"throttled_untrusted_forwarded_requests_total": true,
}

var metricName = regexp.MustCompile(`\bthrottled_[a-z0-9_]+`)

// unknownMetrics returns the throttled_* names in expr that the product
// does not export.
func unknownMetrics(expr string) []string {
	var out []string
	for _, m := range metricName.FindAllString(expr, -1) {
		base := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suf); ok && histograms[b] {
				base = b
			}
		}
		if !productMetrics[base] {
			out = append(out, m)
		}
	}
	return out
}

func TestUnknownMetricsIsCaught(t *testing.T) {
	for expr, want := range map[string]string{
		`rate(throttled_decisions_total[1m])`:                                           "",
		`histogram_quantile(0.9, rate(throttled_decision_duration_seconds_bucket[1m]))`: "",
		`rate(throttled_decision_total[1m])`:                                            "throttled_decision_total",
		`max(throttled_tier_multipliers)`:                                               "throttled_tier_multipliers",
		`sum(throttled_fallback_active_bucket)`:                                         "throttled_fallback_active_bucket",
	} {
		if got := strings.Join(unknownMetrics(expr), ","); got != want {
			t.Errorf("unknownMetrics(%q) = %q, want %q", expr, got, want)
		}
	}
}

func TestDashboardsHaveWhatGrafanaNeeds(t *testing.T) {
	uids := map[string]string{}
	for _, d := range loadDashboards(t) {
		if prev, dup := uids[d.UID]; dup {
			t.Errorf("%s: uid %q already used by %s", d.file, d.UID, prev)
		}
		uids[d.UID] = d.file
		for _, err := range checkDashboard(d) {
			t.Errorf("%s: %v", d.file, err)
		}
	}
}

// checkDashboard lists what Grafana would reject or show broken, what
// would not import into another Grafana, and queries that ignore the
// job and instance the operator picked.
func checkDashboard(d dashboard) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if d.UID == "" || len(d.UID) > 40 {
		fail("uid %q: want 1..40 characters", d.UID)
	}
	if d.Title == "" {
		fail("no title")
	}
	if d.SchemaVersion < 36 {
		fail("schemaVersion %d: want at least 36 (datasource references by uid)", d.SchemaVersion)
	}
	errs = append(errs, checkImport(d)...)
	errs = append(errs, checkVariables(d)...)
	ps := d.allPanels()
	if len(ps) == 0 {
		fail("no panels")
	}
	ids := map[int]string{}
	for _, p := range ps {
		if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
			fail("panel %q: id %d is not positive or already used by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		for _, err := range checkPanel(p) {
			fail("panel %d %q: %v", p.ID, p.Title, err)
		}
	}
	return errs
}

// varDS is the datasource reference of every panel and target.
var varDS = dsRef{"prometheus", dsVar}

func checkPanel(p panel) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.Title == "" || p.Type == "" {
		fail("want a title and a type")
	}
	if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
		fail("gridPos %+v is outside the 24-column grid", g)
	}
	if p.Datasource == nil || *p.Datasource != varDS {
		fail("datasource %+v: want %+v", p.Datasource, varDS)
	}
	if len(p.Targets) == 0 {
		fail("no targets")
	}
	refs := map[string]bool{}
	for _, tg := range p.Targets {
		if tg.RefID == "" || refs[tg.RefID] {
			fail("target refId %q is empty or repeated", tg.RefID)
		}
		refs[tg.RefID] = true
		if strings.TrimSpace(tg.Expr) == "" {
			fail("target %s has no expr", tg.RefID)
		}
		if tg.Datasource != nil && *tg.Datasource != varDS {
			fail("target %s datasource %+v: want %+v", tg.RefID, *tg.Datasource, varDS)
		}
		if u := unknownMetrics(tg.Expr); len(u) > 0 {
			fail("target %s uses metrics throttled does not export: %v", tg.RefID, u)
		}
		if bad := selectorErrors(tg.Expr); len(bad) > 0 {
			fail("target %s: selectors without %s and %s: %q", tg.RefID, jobSel, instSel, bad)
		}
		if rest := grafanaMacros.Replace(tg.Expr); strings.Contains(rest, "$") {
			fail("target %s uses a Grafana variable the tests do not know: %s", tg.RefID, rest)
		}
	}
	return errs
}

// goodDashboard passes checkDashboard; the breakage test changes one thing.
func goodDashboard() dashboard {
	p := panel{ID: 1, Type: "timeseries", Title: "x", Datasource: &dsRef{"prometheus", dsVar},
		Targets: []target{{Expr: `sum(throttled_fallback_active{job=~"$job", instance=~"$instance"})`, RefID: "A"}}}
	p.GridPos.W, p.GridPos.H = 12, 8
	d := dashboard{file: "x.json", UID: "x", Title: "x", SchemaVersion: 39, Panels: []panel{p},
		Inputs: []input{{Name: dsInput, Type: "datasource", PluginID: "prometheus"}}}
	ds := variable{Type: "datasource", Name: "datasource", Query: json.RawMessage(`"prometheus"`)}
	ds.Current.Value = "${" + dsInput + "}"
	job := variable{Type: "query", Name: "job", Datasource: &dsRef{"prometheus", dsVar},
		Query: json.RawMessage(`"label_values(throttled_decisions_total, job)"`)}
	inst := variable{Type: "query", Name: "instance", Datasource: &dsRef{"prometheus", dsVar}, IncludeAll: true,
		AllValue: allInstances, Query: json.RawMessage(`{"query": "label_values(throttled_decisions_total{job=~\"$job\"}, instance)"}`)}
	d.Templating.List = []variable{ds, job, inst}
	return d
}

// TestCheckDashboardCatchesBreakage feeds checkDashboard broken dashboards.
func TestCheckDashboardCatchesBreakage(t *testing.T) {
	if errs := checkDashboard(goodDashboard()); len(errs) > 0 {
		t.Fatalf("good dashboard: %v", errs)
	}
	tg := func(d *dashboard) *target { return &d.Panels[0].Targets[0] }
	v := func(d *dashboard, i int) *variable { return &d.Templating.List[i] }
	for name, breakIt := range map[string]func(*dashboard){
		"no uid":           func(d *dashboard) { d.UID = "" },
		"no title":         func(d *dashboard) { d.Title = "" },
		"old schema":       func(d *dashboard) { d.SchemaVersion = 16 },
		"no panels":        func(d *dashboard) { d.Panels = nil },
		"dup id":           func(d *dashboard) { d.Panels = append(d.Panels, d.Panels[0]) },
		"no targets":       func(d *dashboard) { d.Panels[0].Targets = nil },
		"no expr":          func(d *dashboard) { tg(d).Expr = " " },
		"no refId":         func(d *dashboard) { tg(d).RefID = "" },
		"fixed ds":         func(d *dashboard) { d.Panels[0].Datasource = &dsRef{"prometheus", "prometheus"} },
		"input ds":         func(d *dashboard) { d.Panels[0].Datasource = &dsRef{"prometheus", "${DS_PROMETHEUS}"} },
		"no ds":            func(d *dashboard) { d.Panels[0].Datasource = nil },
		"target ds uid":    func(d *dashboard) { tg(d).Datasource = &dsRef{"prometheus", "x"} },
		"unknown var":      func(d *dashboard) { tg(d).Expr = `up{job=~"$job", instance=~"$instance", x="$tier"}` },
		"typo metric":      func(d *dashboard) { tg(d).Expr = `throttled_decision_total{job=~"$job", instance=~"$instance"}` },
		"no selectors":     func(d *dashboard) { tg(d).Expr = "sum(throttled_fallback_active)" },
		"no job":           func(d *dashboard) { tg(d).Expr = `sum(throttled_fallback_active{instance=~"$instance"})` },
		"no instance":      func(d *dashboard) { tg(d).Expr = `sum(throttled_fallback_active{job=~"$job"})` },
		"off the grid":     func(d *dashboard) { d.Panels[0].GridPos.X = 20 },
		"no inputs":        func(d *dashboard) { d.Inputs = nil },
		"input not ds":     func(d *dashboard) { d.Inputs[0].PluginID = "loki" },
		"no variables":     func(d *dashboard) { d.Templating.List = nil },
		"extra variable":   func(d *dashboard) { d.Templating.List = append(d.Templating.List, variable{Name: "tier"}) },
		"ds var fixed":     func(d *dashboard) { v(d, 0).Current.Value = "prometheus" },
		"ds var filtered":  func(d *dashboard) { v(d, 0).Regex = "/prod/" },
		"job var fixed ds": func(d *dashboard) { v(d, 1).Datasource = &dsRef{"prometheus", "prometheus"} },
		"job var other":    func(d *dashboard) { v(d, 1).Query = json.RawMessage(`"label_values(up, job)"`) },
		"job var typo":     func(d *dashboard) { v(d, 1).Query = json.RawMessage(`"label_values(throttled_decision_total, job)"`) },
		"instance all jobs": func(d *dashboard) {
			v(d, 2).Query = json.RawMessage(`"label_values(throttled_decisions_total, instance)"`)
		},
		"instance no all":    func(d *dashboard) { v(d, 2).IncludeAll = false },
		"instance all value": func(d *dashboard) { v(d, 2).AllValue = "" },
	} {
		d := goodDashboard()
		breakIt(&d)
		if errs := checkDashboard(d); len(errs) == 0 {
			t.Errorf("%s: checkDashboard found nothing wrong", name)
		}
	}
}

// TestDashboardsCoverTheProduct requires a panel for each thing operators
// watch (the list).
func TestDashboardsCoverTheProduct(t *testing.T) {
	var exprs []string
	for _, q := range dashboardQueries(t) {
		exprs = append(exprs, q.expr)
	}
	all := strings.Join(exprs, "\n")
	for what, re := range map[string]string{
		"decisions by tier and decision": `sum by \(tier, decision\) \(rate\(throttled_decisions_total`,
		"requests/s":                     `(?m)^sum\(rate\(throttled_requests_total\{[^}]*\}\[[^]]+\]\)\)$`,
		"refused share by reason":        `sum by \(reason\) \(rate\(throttled_requests_total`,
		"refused share by tier":          `sum by \(tier\) \(rate\(throttled_requests_total`,
		"limits in force":                `throttled_limit\{`,
		"decision latency p50":           `histogram_quantile\(0\.5, [^\n]*throttled_decision_duration_seconds_bucket`,
		"decision latency p99":           `histogram_quantile\(0\.99, [^\n]*throttled_decision_duration_seconds_bucket`,
		"multipliers":                    `throttled_tier_multiplier`,
		"enforced multipliers":           `min\(throttled_effective_multiplier`,
		"signals in seconds":             `throttled_controller_signal_seconds`,
		"signals as ratios":              `throttled_controller_signal_ratio`,
		"signal targets":                 `throttled_controller_signal_target_(seconds|ratio)`,
		"breaker state":                  `throttled_breaker_state`,
		"bulkhead in flight":             `throttled_bulkhead_inflight`,
		"bulkhead rejections":            `throttled_bulkhead_rejected_total`,
		"top consumers":                  `topk\(\d+, [^\n]*throttled_top_consumers`,
		"controller leader":              `throttled_controller_leader`,
		"controller CPU wait":            `throttled_controller_cpu_wait_ratio`,
		"controller steps":               `throttled_controller_steps_total`,
		"store errors":                   `throttled_store_errors_total`,
		"fallback":                       `throttled_fallback_active`,
		"inner loop limit":               `throttled_concurrency_limit\{[^}]*name="upstream"`,
		"inner loop latency vs baseline": `throttled_inner_loop_baseline_seconds`,
		"near limit by tier and rule":    `sum by \(tier, rule\) \(rate\(throttled_near_limit_total`,
		"admitted latency p99":           `histogram_quantile\(0\.99, [^\n]*throttled_admitted_request_duration_seconds_bucket`,
	} {
		if !regexp.MustCompile(re).MatchString(all) {
			t.Errorf("no dashboard panel shows %s (no expr matches %s)", what, re)
		}
	}
}

// TestPanelTitlesAreUnique: the live test finds panels by title across
// all dashboards, and operators search by title too.
func TestPanelTitlesAreUnique(t *testing.T) {
	seen := map[string]string{}
	n := 0
	for _, d := range loadDashboards(t) {
		for _, p := range d.allPanels() {
			if prev, dup := seen[p.Title]; dup {
				t.Errorf("%s: panel title %q is already used in %s", d.file, p.Title, prev)
			}
			seen[p.Title] = d.file
			n += len(p.Targets)
		}
	}
	t.Logf("%d panels, %d queries", len(seen), n)
}
