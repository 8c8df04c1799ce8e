// Package proxy is the sidecar's reverse proxy: the one request pipeline
// (limiter/pipeline) in front of an upstream HTTP service.
//
// What is the proxy's own, around the pipeline's stages:
//
//   - request bodies are bounded (Settings.MaxBodyBytes): a declared
//     Content-Length above it is refused with 413 before any rule counts
//     it; a body that grows past it while streaming ends the upstream call
//     and is answered 413, and never counts as an upstream failure (a
//     client must not be able to open a breaker with oversized bodies);
//   - X-Forwarded-For, -Host and -Proto: from a trusted proxy
//     (Settings.Trusted) the incoming chain is extended, from anyone else
//     it is replaced by the peer's address;
//   - the upstream's failures: 504 when no response headers came within
//     Settings.Timeout (or the route breaker's deadline), 502 otherwise;
//   - the rate-limit headers: the pipeline puts ours on every answer in
//     place of the upstream's; an upgrade's 101, which the reverse proxy
//     writes after the connection is hijacked, is cleaned of the
//     upstream's here.
package proxy
