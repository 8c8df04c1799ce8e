package throttled

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/multiplier"
	"github.com/throttledhq/throttled/policy"
)

// localMultipliers carries the controller's multipliers to the enforcer in
// one process (embedded mode, no Redis): the controller's Publisher and the
// enforcer's MultiplierSource at once.
type localMultipliers struct {
	cur atomic.Pointer[multiplier.Set]
}

func (l *localMultipliers) Publish(_ context.Context, m multiplier.Set) error {
	l.cur.Store(&m)
	return nil
}

// Rate is the tier's rate cap, 0 when it has none.
func (l *localMultipliers) Rate(tier string) float64 {
	if m := l.cur.Load(); m != nil {
		return m.Rates[tier]
	}
	return 0
}

func (l *localMultipliers) Multiplier(tier string) float64 {
	if m := l.cur.Load(); m != nil {
		if v, ok := m.Tiers[tier]; ok {
			return v
		}
	}
	return 1
}

// localLease makes a lone controller the leader.
type localLease struct{}

func (localLease) Acquire(context.Context) (bool, error) { return true, nil }
func (localLease) Renew(context.Context) (bool, error)   { return true, nil }
func (localLease) Release(context.Context) error         { return nil }

// pinned applies the admin API's pins over the controller's multipliers.
// The pins map is replaced whole on every config change, never mutated.
type pinned struct {
	src interface {
		multiplier.Source
		multiplier.RateSource
	}
	pins atomic.Pointer[map[string]policy.Pin]
	now  func() time.Time
}

func (p *pinned) Multiplier(tier string) float64 {
	if m := p.pins.Load(); m != nil && len(*m) > 0 {
		if pin, ok := (*m)[tier]; ok && pin.Active(p.now()) {
			return pin.Multiplier
		}
	}
	return p.src.Multiplier(tier)
}

// Rate is the controller's rate cap of the tier, none while it is pinned:
// a pin is the operator's whole say on the tier's load.
func (p *pinned) Rate(tier string) float64 {
	if m := p.pins.Load(); m != nil && len(*m) > 0 {
		if pin, ok := (*m)[tier]; ok && pin.Active(p.now()) {
			return 0
		}
	}
	return p.src.Rate(tier)
}

func (p *pinned) setPins(m map[string]policy.Pin) { p.pins.Store(&m) }

// pin is the tier's active pin, if any.
func (p *pinned) pin(tier string) (float64, bool) {
	if m := p.pins.Load(); m != nil {
		if pin, ok := (*m)[tier]; ok && pin.Active(p.now()) {
			return pin.Multiplier, true
		}
	}
	return 0, false
}

// origin is where the unpinned multipliers come from now (an
// instrument.Source* value).
func (p *pinned) origin() string {
	switch src := p.src.(type) {
	case *coord.Subscriber:
		switch src.Snapshot().Origin {
		case coord.OriginRedis:
			return instrument.SourceController
		case coord.OriginStale:
			return instrument.SourceStale
		}
	case *localMultipliers:
		if src.cur.Load() != nil {
			return instrument.SourceController
		}
	}
	return instrument.SourceNone
}

// tierTable is the key → tier assignments of the current config.
type tierTable struct {
	m atomic.Pointer[map[string]string]
}

func (t *tierTable) TierOf(client string) (string, bool) {
	if m := t.m.Load(); m != nil {
		tier, ok := (*m)[client]
		return tier, ok
	}
	return "", false
}

// multiplierStatus reports what the enforcer applies, for GET /v1/multipliers:
// the controller's multipliers (the admin API applies pins itself), their
// source in throttled_effective_multiplier's words, when they were
// published, and why each tier last moved and since when.
type multiplierStatus struct {
	tiers func() []string
	m     *pinned
}

func (m *multiplierStatus) Multipliers() []admin.MultiplierStatus {
	source := m.m.origin()
	var set multiplier.Set
	switch src := m.m.src.(type) {
	case *coord.Subscriber:
		snap := src.Snapshot()
		set = multiplier.Set{At: snap.At, Reasons: snap.Reasons, Since: snap.Since}
	case *localMultipliers:
		if cur := src.cur.Load(); cur != nil {
			set = *cur
		}
	}
	var out []admin.MultiplierStatus
	for _, t := range m.tiers() {
		out = append(out, admin.MultiplierStatus{Tier: t, Multiplier: m.m.src.Multiplier(t), Source: source,
			UpdatedAt: set.At, Reason: set.Reasons[t], Since: set.Since[t]})
	}
	return out
}

// topConsumers serves GET /v1/top from the enforcer's top-K.
type topConsumers struct{ t *instrument.TopK }

func (c topConsumers) TopConsumers() (policy.Duration, []admin.Consumer) {
	top := c.t.Top()
	out := make([]admin.Consumer, len(top))
	for i, k := range top {
		out[i] = admin.Consumer{Key: k.Key, Fingerprint: instrument.Fingerprint(k.Key), Refused: k.Count, Error: k.Error}
	}
	return policy.Duration(c.t.Window()), out
}
