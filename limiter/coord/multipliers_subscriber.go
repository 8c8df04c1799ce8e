package coord

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/enum"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// publishedSet is an accepted set with the local time it was received. It
// is immutable once stored, so readers need no lock.
//
// Staleness is judged by the receipt time on this instance's clock (with
// time.Now, its monotonic reading), never by comparing the controller's
// At with this clock: hosts whose clocks disagree, or a clock stepped by
// NTP, neither ignore fresh multipliers nor keep dead ones.
type publishedSet struct {
	set      multiplier.Set
	own      map[string]float64 // set.Instances[Settings.Instance]: this instance's own factors, nil when none
	received time.Time
	staleAt  time.Time // received + StaleAfter
}

func (p *publishedSet) stale(now time.Time) bool { return now.After(p.staleAt) }

// Origin says where the multipliers a subscriber applies come from.
type Origin uint8

// Origins.
const (
	OriginNone  Origin = iota // nothing received yet: every multiplier is 1
	OriginRedis               // fresh multipliers from Redis
	OriginStale               // the last ones are older than StaleAfter: every multiplier is 1
)

var originNames = enum.New[Origin]("coord", "origin", "none", "redis", "stale")

func (o Origin) String() string { return originNames.String(o) }

// Snapshot is what a subscriber holds, for the admin API.
type Snapshot struct {
	Tiers      map[string]float64 // last accepted, with this instance's own factors (a copy); applied only when Origin is OriginRedis
	Epoch      uint64
	At         time.Time     // the controller step that produced them (its clock)
	Age        time.Duration // since this instance received them; 0 when Origin is OriginNone
	Origin     Origin        // none, redis or stale
	Subscribed bool          // the pub/sub subscription is up (never with PollOnly)
	// Reasons and Since say why each tier last moved and when, as the
	// controller published them (copies; a tier absent has not moved).
	Reasons map[string]string
	Since   map[string]time.Time
}

// Timing of the subscription. A silent subscription is pinged after
// subHealthCheck and dropped if the pong does not come in as long again.
const (
	subHealthCheck = 5 * time.Second
	subMinBackoff  = 100 * time.Millisecond
	subMaxBackoff  = 2 * time.Second
)

// Subscriber keeps the published multipliers in memory for the
// enforcers: pub/sub for speed, a poll for the messages pub/sub loses. It
// satisfies MultiplierSource.
type Subscriber struct {
	c          redis.UniversalClient
	s          Settings
	key        string
	cur        atomic.Pointer[publishedSet]
	subscribed atomic.Bool
	pollNow    chan struct{}
}

// NewSubscriber returns a subscriber on c (a single Redis or a
// cluster client); call Run to start it. It registers the gauges
// throttled_multiplier_age_seconds and throttled_multiplier_stale_after_seconds
// (its StaleAfter, so that alerts follow the configured staleness) on reg
// (nil: not registered).
func NewSubscriber(c redis.UniversalClient, s Settings, reg prometheus.Registerer) (*Subscriber, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	sub := &Subscriber{c: c, s: s, key: s.key(), pollNow: make(chan struct{}, 1)}
	if reg != nil {
		age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "throttled_multiplier_age_seconds",
			Help: "Time since this instance received the last new multipliers (a new epoch or a controller heartbeat); +Inf before the first.",
		}, sub.ageSeconds)
		staleAfter := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttled_multiplier_stale_after_seconds",
			Help: "Age beyond which this instance treats the multipliers as stale (1): controller.stale_after.",
		})
		staleAfter.Set(s.StaleAfter.Seconds())
		for _, g := range []prometheus.Collector{age, staleAfter} {
			if err := reg.Register(g); err != nil {
				return nil, fmt.Errorf("coord: registering the multiplier gauges: %w", err)
			}
		}
	}
	return sub, nil
}

// Multiplier is the multiplier to apply to tier now: this instance's own
// factor when the controller published one (Settings.Instance), else the
// fleet's; 1 for an unknown tier, before anything was received, and when
// the last set is stale. It takes no lock and allocates nothing.
func (s *Subscriber) Multiplier(tier string) float64 {
	p := s.cur.Load()
	if p == nil || p.stale(s.s.Now()) {
		return 1
	}
	if v, ok := p.own[tier]; ok {
		return v
	}
	if v, ok := p.set.Tiers[tier]; ok {
		return v
	}
	return 1
}

// Rate is the tier's admission cap in requests per second across all
// instances, 0 when it is not capped or the multipliers are stale.
func (s *Subscriber) Rate(tier string) float64 {
	p := s.cur.Load()
	if p == nil || p.stale(s.s.Now()) {
		return 0
	}
	return p.set.Rates[tier]
}

// Snapshot describes the multipliers held now.
func (s *Subscriber) Snapshot() Snapshot {
	snap := Snapshot{Subscribed: s.subscribed.Load()}
	p := s.cur.Load()
	if p == nil {
		return snap
	}
	now := s.s.Now()
	snap.Tiers = maps.Clone(p.set.Tiers)
	maps.Copy(snap.Tiers, p.own) // what this instance applies: its own factors over the fleet's
	snap.Reasons, snap.Since = maps.Clone(p.set.Reasons), maps.Clone(p.set.Since)
	snap.Epoch, snap.At, snap.Age = p.set.Epoch, p.set.At, now.Sub(p.received)
	snap.Origin = OriginRedis
	if p.stale(now) {
		snap.Origin = OriginStale
	}
	return snap
}

func (s *Subscriber) ageSeconds() float64 {
	p := s.cur.Load()
	if p == nil {
		return math.Inf(1)
	}
	return s.s.Now().Sub(p.received).Seconds()
}

// offer takes m if it is valid and newer than what is held (see newer),
// and reports whether it did. Safe for concurrent use.
func (s *Subscriber) offer(m multiplier.Set, from string) bool {
	if err := m.Validate(s.s.MaxMultiplier); err != nil {
		s.s.Logger.Warn("coord: ignoring invalid multipliers", "from", from, "err", err)
		return false
	}
	now := s.s.Now()
	next := &publishedSet{set: m, received: now, staleAt: now.Add(s.s.StaleAfter)}
	if s.s.Instance != "" {
		next.own = m.Instances[s.s.Instance]
	}
	for {
		cur := s.cur.Load()
		if !newerSet(cur, &m, now) {
			if m.Epoch < cur.set.Epoch {
				s.s.Logger.Debug("coord: ignoring multipliers of an older epoch",
					"from", from, "epoch", m.Epoch, "held", cur.set.Epoch)
			}
			return false
		}
		if s.cur.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// Run keeps the multipliers up to date until ctx ends, then returns nil.
// It survives Redis restarts: the subscription is re-established with
// backoff and every (re)subscription triggers a poll to cover the gap.
// Call it once.
func (s *Subscriber) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if !s.s.PollOnly {
		wg.Go(func() { s.listen(ctx) })
	}
	s.pollLoop(ctx)
	wg.Wait()
	return nil
}

// pollLoop polls at once, then every PollInterval and on request.
func (s *Subscriber) pollLoop(ctx context.Context) {
	t := time.NewTicker(s.s.PollInterval)
	defer t.Stop()
	failing := false
	for {
		s.poll(ctx, &failing)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.pollNow:
		}
	}
}

// poll reads the hash once. failing carries the outcome between polls so
// that an outage is logged once, not every second.
func (s *Subscriber) poll(ctx context.Context, failing *bool) {
	cctx, cancel := context.WithTimeout(ctx, max(s.s.PollInterval, time.Second))
	defer cancel()
	m, found, err := loadMultipliers(cctx, s.c, s.key, s.s.Instance, s.s.MaxMultiplier)
	switch {
	case err != nil && ctx.Err() == nil && !*failing:
		s.s.Logger.Warn("coord: polling multipliers failed", "key", s.key, "err", err)
	case err == nil && *failing:
		s.s.Logger.Info("coord: polling multipliers works again", "key", s.key)
	}
	*failing = err != nil
	if found {
		s.offer(m, "poll")
	}
}

func (s *Subscriber) triggerPoll() {
	select {
	case s.pollNow <- struct{}{}:
	default:
	}
}

// listen keeps a subscription up until ctx ends, backing off between
// failed attempts.
func (s *Subscriber) listen(ctx context.Context) {
	backoff := subMinBackoff
	for {
		up, err := s.session(ctx)
		s.subscribed.Store(false)
		if ctx.Err() != nil {
			return
		}
		if up {
			backoff = subMinBackoff
			s.s.Logger.Warn("coord: multipliers subscription lost; polling meanwhile", "channel", s.key, "err", err)
		}
		if wait.Sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, subMaxBackoff)
	}
}

// session subscribes once and applies messages until the connection fails
// or ctx ends. It reports whether the subscription was ever confirmed.
func (s *Subscriber) session(ctx context.Context) (up bool, err error) {
	channels := []string{s.key}
	if s.s.Instance != "" {
		channels = append(channels, ownKey(s.key, s.s.Instance)) // see ownfactors.go
	}
	ps := s.c.Subscribe(ctx, channels...)
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer func() { stop(); _ = ps.Close() }()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, subHealthCheck)
		if err != nil {
			if !isNetTimeout(err) || pinged {
				return up, err
			}
			if err := ps.Ping(ctx); err != nil {
				return up, err
			}
			pinged = true
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				up = true
				s.subscribed.Store(true)
				s.s.Logger.Info("coord: subscribed to multipliers", "channel", s.key)
				s.triggerPoll()
			}
		case *redis.Message:
			set, err := parseMultiplierMessage(m.Payload)
			if err != nil {
				s.s.Logger.Warn("coord: ignoring a multipliers message", "err", err)
				continue
			}
			s.offer(set, "pubsub")
		}
	}
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
