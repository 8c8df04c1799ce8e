// Package identity tells who sent an HTTP request: the API key from a
// header (vouched for by an optional KeyVerifier), the subject of a
// verified JWT (HS256, RS256, ES256), and the client IP, believed from
// X-Forwarded-For only through trusted proxies and grouped by prefix for
// IPv6.
package identity
