// Package promserver starts a Debian `prometheus` of a program's own: on
// a free loopback port, with a temporary directory for its configuration
// and storage, scraping given targets' /metrics at a fixed interval. The
// overload bench uses it to measure the controller on its Prometheus
// signal path with one command (`throttled bench overload --prometheus`).
// Its children die with the process that started them (Linux: the
// parent-death signal), so an interrupted bench leaves none behind.
package promserver
