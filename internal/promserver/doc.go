// Package promserver starts a Debian `prometheus` of a program's own: on
// a free loopback port, with a temporary directory for its configuration
// and storage, scraping given targets' /metrics at a fixed interval. The
// overload bench uses it to measure the controller on its Prometheus
// signal path with one command (`throttled bench overload --prometheus`).
// The server dies with the process that started it (see childproc).
package promserver
