package coord

// The multipliers' wire forms: the Redis hash the publisher writes (its
// fields besides the tiers), the pub/sub message, and their parsers.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Hash fields besides the tiers. Tier names must not start with "_".
const (
	multFieldEpoch = "_epoch"
	multFieldAt    = "_at"
	multRatePrefix = "_rate:" // + tier: the tier's rate cap (readers before caps ignore it)
	// + tier: why the tier last moved, and since when (unix ms); readers
	// before them ignore them.
	multReasonPrefix = "_reason:"
	multSincePrefix  = "_since:"
	// + tier: the level the tier was last cut from, and when (unix ms),
	// for the next leader's Load; enforcers ignore them.
	multKneePrefix = "_knee:"
	multCutPrefix  = "_cut:"
)

// parseMultiplierHash reads a published hash (HGETALL). Unknown "_" fields are
// ignored, for fields added by later versions.
func parseMultiplierHash(h map[string]string) (multiplier.Set, error) {
	m := multiplier.Set{Tiers: make(map[string]float64, len(h))}
	epoch, err := strconv.ParseUint(h[multFieldEpoch], 10, 64)
	if err != nil {
		return m, fmt.Errorf("%w: multipliers field %s: %v", ErrBadReply, multFieldEpoch, err)
	}
	at, err := strconv.ParseInt(h[multFieldAt], 10, 64)
	if err == nil && at <= 0 {
		err = fmt.Errorf("%d is not after 1970", at)
	}
	if err != nil {
		return m, fmt.Errorf("%w: multipliers field %s: %v", ErrBadReply, multFieldAt, err)
	}
	m.Epoch, m.At = epoch, time.UnixMilli(at)
	for f, s := range h {
		if err := parseExplained(&m, f, s); err != nil {
			return m, err
		}
		if tier, ok := strings.CutPrefix(f, multRatePrefix); ok {
			if m.Rates == nil {
				m.Rates = map[string]float64{}
			}
			if m.Rates[tier], err = strconv.ParseFloat(s, 64); err != nil {
				return m, fmt.Errorf("%w: multipliers rate of tier %q: %v", ErrBadReply, tier, err)
			}
			continue
		}
		if strings.HasPrefix(f, "_") {
			continue
		}
		if m.Tiers[f], err = strconv.ParseFloat(s, 64); err != nil {
			return m, fmt.Errorf("%w: multipliers tier %q: %v", ErrBadReply, f, err)
		}
	}
	return m, nil
}

// parseExplained reads hash field f into m's Reasons or Since if it is one
// of theirs.
func parseExplained(m *multiplier.Set, f, v string) error {
	if tier, ok := strings.CutPrefix(f, multReasonPrefix); ok {
		if m.Reasons == nil {
			m.Reasons = map[string]string{}
		}
		m.Reasons[tier] = v
	}
	if tier, ok := strings.CutPrefix(f, multSincePrefix); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: multipliers since of tier %q: %v", ErrBadReply, tier, err)
		}
		if m.Since == nil {
			m.Since = map[string]time.Time{}
		}
		m.Since[tier] = time.UnixMilli(ms)
	}
	return parseKnee(m, f, v)
}

// parseKnee reads hash field f into m's Knees or Cuts if it is one of
// theirs.
func parseKnee(m *multiplier.Set, f, v string) error {
	if tier, ok := strings.CutPrefix(f, multKneePrefix); ok {
		k, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%w: multipliers knee of tier %q: %v", ErrBadReply, tier, err)
		}
		if m.Knees == nil {
			m.Knees = map[string]float64{}
		}
		m.Knees[tier] = k
	}
	if tier, ok := strings.CutPrefix(f, multCutPrefix); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: multipliers cut of tier %q: %v", ErrBadReply, tier, err)
		}
		if m.Cuts == nil {
			m.Cuts = map[string]time.Time{}
		}
		m.Cuts[tier] = time.UnixMilli(ms)
	}
	return nil
}

// multiplierMessage is the pub/sub form of a multiplier.Set.
type multiplierMessage struct {
	Epoch   uint64             `json:"epoch"`
	At      int64              `json:"at"` // unix ms
	Tiers   map[string]float64 `json:"tiers"`
	Rates   map[string]float64 `json:"rates,omitempty"`
	Reasons map[string]string  `json:"reasons,omitempty"`
	Since   map[string]int64   `json:"since,omitempty"` // unix ms
	// Instances: instance id → tier → its own multiplier (Set.Instances).
	Instances map[string]map[string]float64 `json:"instances,omitempty"`
}

func parseMultiplierMessage(payload string) (multiplier.Set, error) {
	var msg multiplierMessage
	if err := json.Unmarshal([]byte(payload), &msg); err != nil {
		return multiplier.Set{}, fmt.Errorf("%w: multipliers message: %v", ErrBadReply, err)
	}
	if msg.At <= 0 {
		return multiplier.Set{}, fmt.Errorf("%w: multipliers message: at %d is missing or not after 1970", ErrBadReply, msg.At)
	}
	if msg.Tiers == nil {
		msg.Tiers = map[string]float64{}
	}
	m := multiplier.Set{Tiers: msg.Tiers, Rates: msg.Rates, Reasons: msg.Reasons, Epoch: msg.Epoch, At: time.UnixMilli(msg.At),
		Instances: msg.Instances}
	for tier, ms := range msg.Since {
		if m.Since == nil {
			m.Since = map[string]time.Time{}
		}
		m.Since[tier] = time.UnixMilli(ms)
	}
	return m, nil
}

// publishArgs are the KEYS after the fleet hash's and the lease's, and the
// ARGV, of multPublishScript for m: epoch, at_ms, message, token, fence,
// fenced (1 or 0), the own hashes' TTL in ms, n, n field/value pairs of
// the fleet hash, then ownArgs' blocks.
func publishArgs(key string, m multiplier.Set, token string, fence uint64, ttlMS int64) ([]string, []any, error) {
	at := m.At.UnixMilli()
	mm := multiplierMessage{Epoch: m.Epoch, At: at, Tiers: m.Tiers, Rates: m.Rates, Reasons: m.Reasons}
	for t, since := range m.Since {
		if mm.Since == nil {
			mm.Since = map[string]int64{}
		}
		mm.Since[t] = since.UnixMilli()
	}
	msg, err := json.Marshal(mm)
	if err != nil { // unreachable: validated floats always encode
		return nil, nil, fmt.Errorf("coord: encoding multipliers: %w", err)
	}
	fenced := 0
	if token != "" {
		fenced = 1
	}
	var pairs []any
	for t, v := range m.Tiers {
		pairs = append(pairs, t, strconv.FormatFloat(v, 'g', -1, 64))
	}
	for t, v := range m.Rates {
		pairs = append(pairs, multRatePrefix+t, strconv.FormatFloat(v, 'g', -1, 64))
	}
	for t, r := range m.Reasons {
		pairs = append(pairs, multReasonPrefix+t, r)
	}
	for t, since := range m.Since {
		pairs = append(pairs, multSincePrefix+t, since.UnixMilli())
	}
	for t, k := range m.Knees {
		pairs = append(pairs, multKneePrefix+t, strconv.FormatFloat(k, 'g', -1, 64))
	}
	for t, cut := range m.Cuts {
		pairs = append(pairs, multCutPrefix+t, cut.UnixMilli())
	}
	keys, own, err := ownArgs(key, m, mm)
	if err != nil {
		return nil, nil, err
	}
	args := append([]any{m.Epoch, at, msg, token, fence, fenced, ttlMS, len(pairs) / 2}, pairs...)
	return keys, append(args, own...), nil
}

// Load returns the published multipliers with every instance's own
// factors (found false when nothing was published), for a controller that
// becomes leader.
func (p *Publisher) Load(ctx context.Context) (multiplier.Set, bool, error) {
	h, err := p.c.HGetAll(ctx, p.key).Result()
	if err != nil {
		return multiplier.Set{}, false, fmt.Errorf("coord: loading multipliers: %w", err)
	}
	return checkMultipliers(h, p.s.MaxMultiplier, func(m *multiplier.Set) error { return loadOwn(ctx, p.c, p.key, m) })
}

// loadMultipliers reads the hash at key and, when instance is not "",
// that instance's own factors, in one transaction.
func loadMultipliers(ctx context.Context, c redis.UniversalClient, key, instance string, max float64) (multiplier.Set, bool, error) {
	var fleet, own *redis.MapStringStringCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		fleet = p.HGetAll(ctx, key)
		if instance != "" {
			own = p.HGetAll(ctx, ownKey(key, instance))
		}
		return nil
	})
	if err != nil {
		return multiplier.Set{}, false, fmt.Errorf("coord: loading multipliers: %w", err)
	}
	return checkMultipliers(fleet.Val(), max, func(m *multiplier.Set) error {
		if own == nil {
			return nil
		}
		return parseOwnHash(m, instance, own.Val())
	})
}

// checkMultipliers parses the fleet's hash h, adds own factors by own,
// and validates the whole.
func checkMultipliers(h map[string]string, max float64, own func(*multiplier.Set) error) (multiplier.Set, bool, error) {
	if len(h) == 0 {
		return multiplier.Set{}, false, nil
	}
	m, err := parseMultiplierHash(h)
	if err == nil {
		err = own(&m)
	}
	if err == nil {
		if err = m.Validate(max); err != nil {
			err = fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	if err != nil {
		return multiplier.Set{}, false, err
	}
	return m, true, nil
}

// newerSet reports whether next should replace cur (nil: nothing yet) at
// now: a newer epoch, or the same epoch with another At (a heartbeat; At
// only names a publication, so a controller whose clock stepped back still
// beats, while a poll that reads the same hash again does not). An older
// epoch is ignored while cur is fresh; once cur is stale, another
// publication is taken whatever its epoch, so that enforcers follow a
// controller that restarted from scratch after Redis lost the hash.
func newerSet(cur *publishedSet, next *multiplier.Set, now time.Time) bool {
	if cur == nil {
		return true
	}
	other := !next.At.Equal(cur.set.At)
	switch c := cmp.Compare(next.Epoch, cur.set.Epoch); {
	case c > 0:
		return true
	case c == 0:
		return other
	default:
		return other && cur.stale(now)
	}
}
