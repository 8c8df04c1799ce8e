// Package echolimit is the Echo v4 front of throttled's request pipeline
// (limiter/pipeline), kept apart so that net/http users never import Echo.
package echolimit
