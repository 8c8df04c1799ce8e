// Package dashboards holds what operators watch throttled with; it has no
// Go API of its own, only files and the tests that keep them honest:
//
//   - throttled-overview.json, throttled-controller.json: Grafana dashboards
//     in the export format (an __inputs datasource, DS_PROMETHEUS, for
//     importing into any Grafana; file-provisioned as they are through
//     deploy/grafana/provisioning), with datasource, job and instance
//     variables that every query follows, so one Grafana watches several
//     deployments: a first row from throttled_requests_total (each request
//     once, as its client saw it: requests/s, refused share by reason and by
//     tier, the upstream's error share), the multipliers in force and the
//     upstream's latency against its target; decisions by tier and
//     decision, the limits in force, near-limit warnings, decision latency, store errors and
//     fallback, breakers and bulkheads, top consumers, the upstream,
//     instance health, configuration and builds, the admin API, Envoy's
//     rate limit service and untrusted X-Forwarded-For; the controller's
//     multipliers against its signals, steps and leader lease; the inner
//     loop's concurrency limit, latency against baseline, sheds and
//     admitted latency.
//   - alerts.yml: Prometheus alerting rules (refusal spike, load shedding,
//     limiter latency, store errors, fallback active, breaker open, Redis
//     memory policy, controller leaderless, split brain, stale, blind),
//     each by job and linking its README Runbook section, with unit tests
//     in alerts_test.yml for `promtool test rules`.
//
// The tests check that productMetrics holds every throttled_* metric the
// Go source names and a running throttled exports, and that a panel or an
// alert shows each (or notShown says why not); that each dashboard has
// what Grafana needs, that `promtool check rules` / `promtool test rules`
// / `promtool check config` pass, that docker-compose.yml references only files that exist and that
// its ports and service names agree with the configs it mounts, and they
// run every PromQL expression of the dashboards, the rules and the compose
// controller config against a real Prometheus scraping a running
// `throttled serve` proxy, requiring the key series to return data; and
// the first row's queries, over the window of a known mix, must say what
// its clients saw within 2 % (TestFirstRowTellsTheTruth).
package dashboards
