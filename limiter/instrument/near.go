package instrument

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter"
)

// NearLimitRatio is the share of a key's capacity in use from which an
// admitted decision counts as near the limit (the threshold of Envoy's
// ratelimit service).
const NearLimitRatio = 0.8

// NearLimit counts the admitted decisions that leave their key with at
// least NearLimitRatio of its capacity (the burst, or the window's limit)
// in use: throttled_near_limit_total{tier,rule}, an early warning before
// the 429s. Refused decisions are not counted: they are over the limit,
// not near it. The rule label is the store's rule name: "<rule>#2" for a
// rule's second limit.
type NearLimit struct {
	c *prometheus.CounterVec

	mu       sync.RWMutex // guards children
	children map[labelKey]prometheus.Counter
}

// NewNearLimit registers throttled_near_limit_total on reg.
func NewNearLimit(reg prometheus.Registerer) (*NearLimit, error) {
	n := &NearLimit{
		c: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttled_near_limit_total",
			Help: "Admitted decisions that left their key with at least 80% of its capacity in use, by tier and rule.",
		}, []string{"tier", "rule"}),
		children: make(map[labelKey]prometheus.Counter),
	}
	if err := reg.Register(n.c); err != nil {
		return nil, err
	}
	return n, nil
}

// Near reports whether d, admitted for req, leaves its key near the limit.
func Near(req *limiter.Request, d limiter.Decision) bool {
	c := req.Rule.Capacity()
	return d.Allowed && c > 0 && float64(c-d.Remaining) >= NearLimitRatio*float64(c)
}

// Observe counts d when it is near the limit.
func (n *NearLimit) Observe(req *limiter.Request, d limiter.Decision) {
	if !Near(req, d) {
		return
	}
	k := labelKey{tier: req.Tier, rule: req.Rule.Name}
	n.mu.RLock()
	c := n.children[k]
	n.mu.RUnlock()
	if c == nil {
		n.mu.Lock()
		if c = n.children[k]; c == nil {
			c = n.c.WithLabelValues(k.tier, k.rule)
			n.children[k] = c
		}
		n.mu.Unlock()
	}
	c.Inc()
}

// Store wraps s so that every decision it makes (not refunds or peeks) is
// observed.
func (n *NearLimit) Store(s limiter.Store) limiter.Store { return &nearStore{s: s, n: n} }

type nearStore struct {
	s limiter.Store
	n *NearLimit
}

func (ns *nearStore) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	d, err := ns.s.Decide(ctx, req)
	if err == nil && !req.Refund && !req.Peek {
		ns.n.Observe(&req, d)
	}
	return d, err
}

// CopiesKeys reports whether the store inside copies keys: nearStore keeps
// none (limiter.KeyCopier).
func (ns *nearStore) CopiesKeys() bool { return copiesKeys(ns.s) }
