package throttled

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/identity"
)

// The warning about ignored X-Forwarded-For headers: once, forwardsSettle
// after the first such request, with how many came meanwhile; the counter
// throttled_untrusted_forwarded_requests_total keeps counting.
const (
	forwardsPoll   = 500 * time.Millisecond
	forwardsSettle = 2 * time.Second
)

// watchForwards counts the requests whose X-Forwarded-For is ignored
// because their peer is not in identity.trusted_proxies (a counter on
// /metrics) and warns once.
func (s *Instance) watchForwards() (*identity.UntrustedForwards, error) {
	u := &identity.UntrustedForwards{}
	c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "throttled_untrusted_forwarded_requests_total",
		Help: "Requests that carried X-Forwarded-For from a peer not in identity.trusted_proxies: the header was ignored " +
			"and the peer is the client (behind an unlisted load balancer, every client is its one address)."},
		func() float64 { return float64(u.Count()) })
	if err := s.reg.Register(c); err != nil {
		return nil, err
	}
	s.runners = append(s.runners, func(ctx context.Context) error {
		warnForwards(ctx, u, s.log, forwardsPoll, forwardsSettle)
		return nil
	})
	return u, nil
}

// warnForwards waits for the first counted request, lets settle pass (or
// ctx end), and logs one warning with the count and the first peer.
func warnForwards(ctx context.Context, u *identity.UntrustedForwards, log *slog.Logger, poll, settle time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for u.Count() == 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(settle):
	}
	log.Warn("requests carry X-Forwarded-For from a peer not in identity.trusted_proxies: the header is ignored "+
		"and the peer is the client, so every client behind it shares its per-IP quotas; if that peer is your "+
		"load balancer or ingress, add its address or CIDR to identity.trusted_proxies",
		"requests", u.Count(), "within", settle.String(), "peer", u.First().String(),
		"metric", "throttled_untrusted_forwarded_requests_total")
}
