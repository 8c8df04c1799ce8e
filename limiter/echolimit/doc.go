// Package echolimit adapts an enforce.Enforcer to Echo v4 as middleware,
// kept apart so that net/http users of package enforce never import Echo.
package echolimit
