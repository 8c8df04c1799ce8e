package identity

import (
	"net/netip"
	"sync/atomic"
)

// UntrustedForwards counts requests that carried X-Forwarded-For from a
// peer outside the trusted proxies. Their header is ignored, as it must be;
// but behind a load balancer missing from TrustedProxies every client is
// the balancer's one address, and per-IP quotas are shared by all of them.
// A count that grows says so.
//
// It is safe for concurrent use; the zero value is ready.
type UntrustedForwards struct {
	n     atomic.Uint64
	first atomic.Pointer[netip.Addr]
}

// observe counts one request from peer. It allocates only for the first.
func (u *UntrustedForwards) observe(peer netip.Addr) {
	if u.first.Load() == nil {
		p := peer
		u.first.CompareAndSwap(nil, &p)
	}
	u.n.Add(1)
}

// Count is the number of requests counted so far.
func (u *UntrustedForwards) Count() uint64 { return u.n.Load() }

// First is the peer of the first request counted; the zero Addr before any.
func (u *UntrustedForwards) First() netip.Addr {
	if p := u.first.Load(); p != nil {
		return *p
	}
	return netip.Addr{}
}
