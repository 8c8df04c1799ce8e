// Package dashboards holds what operators watch throttled with; it has no
// Go API of its own, only files and the tests that keep them honest:
//
//   - throttled-overview.json, throttled-controller.json: Grafana dashboards
//     in the export format (an __inputs datasource, DS_PROMETHEUS, for
//     importing into any Grafana; file-provisioned as they are through
//     deploy/grafana/provisioning), with datasource, job and instance
//     variables that every query follows, so one Grafana watches several
//     deployments: decisions by tier and decision, refusal ratios (429 and
//     503 apart), decision latency, store errors and fallback, breakers and
//     bulkheads, top consumers, the upstream behind the sidecar, and the
//     controller's multipliers against its signals, steps and leader lease.
//   - alerts.yml: Prometheus alerting rules (refusal spike, load shedding,
//     limiter latency, store errors, fallback active, breaker open, Redis
//     memory policy, controller leaderless, split brain, stale, blind), each by job and
//     linking its README Runbook section, with unit tests in alerts_test.yml
//     for `promtool test rules`.
//
// The tests check that each dashboard has what Grafana needs, that
// `promtool check rules` / `promtool test rules` / `promtool check config`
// pass, that docker-compose.yml references only files that exist and that
// its ports and service names agree with the configs it mounts, and they
// run every PromQL expression of the dashboards, the rules and the compose
// controller config against a real Prometheus scraping a running
// `throttled serve` proxy, requiring the key series to return data.
package dashboards
