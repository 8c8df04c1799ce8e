package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// ErrStaleEpoch is returned by Publish when Redis already holds a newer
// epoch: a stale ex-leader must not overwrite a newer leader's multipliers.
var ErrStaleEpoch = errors.New("coord: epoch older than the published one")

// ErrFenced is returned by a fenced Publisher's Publish when its lease is
// not held: another replica leads now, or the lease expired.
var ErrFenced = errors.New("coord: publish fenced: the leader lease is not held")

// Settings configure the publisher and the subscriber of the
// multipliers. Zero values mean the defaults in withDefaults.
type Settings struct {
	// Prefix of the hash "<prefix>multipliers" and of the pub/sub channel of
	// the same name. "" means "throttled:". It must not contain { or }.
	Prefix string
	// MaxMultiplier is the largest valid multiplier; sets with a larger one
	// are refused by the publisher and ignored by the subscriber. 0 means 1.
	MaxMultiplier float64
	// PollInterval: the subscriber re-reads the hash this often, covering
	// messages lost while its subscription was down. 0 means 1 s.
	PollInterval time.Duration
	// StaleAfter: the subscriber treats multipliers as 1 when it received
	// no new set (a new epoch or a controller heartbeat) for this long, by
	// its own monotonic clock; for a Publisher, the lifetime of an
	// instance's own factors' hash (ownfactors.go). 0 means 15 s, three
	// default controller periods.
	StaleAfter time.Duration
	// Instance, for a Subscriber, is this instance's id (as in its
	// TallySettings.ID): a controller whose scope is the instance publishes
	// its own factors under it, which it applies in place of the fleet's.
	// "" applies the fleet's alone.
	Instance string
	// PollOnly makes the subscriber poll without subscribing, for Redis
	// proxies without pub/sub.
	PollOnly bool
	// Now is the subscriber's clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the subscriber's connection changes and rejected
	// data; nil discards.
	Logger *slog.Logger
	// Lease, for a Publisher: when set, every Publish is fenced by it
	// (refused with ErrFenced unless this lease is held). Its key must be in
	// the hash's cluster slot: use LeaseKey.
	Lease *Lease
}

// LeaseKey is the key of the controller replicas' leader lease for these
// settings, in the cluster slot of the multipliers hash so that a fenced
// publish can check it.
func (s Settings) LeaseKey() string {
	d, _ := s.withDefaults()
	return inSlotOf(d.key(), ":leader")
}

// withDefaults is the one place where defaults are set; it also validates.
func (s Settings) withDefaults() (Settings, error) {
	if s.Prefix == "" {
		s.Prefix = "throttled:"
	}
	if s.MaxMultiplier == 0 {
		s.MaxMultiplier = 1
	}
	if s.PollInterval == 0 {
		s.PollInterval = time.Second
	}
	if s.StaleAfter == 0 {
		s.StaleAfter = 15 * time.Second
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case strings.ContainsAny(s.Prefix, "{}"):
		return s, fmt.Errorf("%w: prefix %q must not contain { or }", ErrInvalid, s.Prefix)
	case !(s.MaxMultiplier > 0) || math.IsInf(s.MaxMultiplier, 0):
		return s, fmt.Errorf("%w: max multiplier %v must be a finite number > 0", ErrInvalid, s.MaxMultiplier)
	case s.PollInterval < time.Millisecond:
		return s, fmt.Errorf("%w: poll interval %v must be at least 1ms", ErrInvalid, s.PollInterval)
	case s.StaleAfter < time.Millisecond:
		return s, fmt.Errorf("%w: stale after %v must be at least 1ms", ErrInvalid, s.StaleAfter)
	}
	return s, nil
}

// key is both the hash and the channel name.
func (s *Settings) key() string { return s.Prefix + "multipliers" }

// multPublishScript replaces the hash unless it holds a newer epoch, then
// publishes ARGV[3] on the channel named like the hash, KEYS[1]. Fenced
// (ARGV[6] = 1: KEYS[2] the lease, KEYS[3] its fencing counter, all in one
// slot), it first checks that the lease holds ARGV[4] and the counter
// ARGV[5]. The instances' own factors (ownfactors.go) follow: KEYS the
// ids' set, then each instance's hash; ARGV per instance id, message, n
// and n pairs. Each own hash is rewritten with _at and expires after
// ARGV[7] ms, the ids' set holds this publication's ids alone, and each
// own message goes out before the fleet's.
//
//	ARGV = epoch, at_ms, message, token, fence, fenced, own_ttl_ms, n, n field/value pairs, own blocks
//
// Replies {1} when written, {0, stored_epoch} when refused for the epoch,
// {2} when fenced.
var multPublishScript = redis.NewScript(`
local fenced = ARGV[6] == '1'
if fenced and (redis.call('GET', KEYS[2]) ~= ARGV[4] or redis.call('GET', KEYS[3]) ~= ARGV[5]) then
  return {2}
end
local cur = redis.call('HGET', KEYS[1], '_epoch')
local n = cur and tonumber(cur) -- a corrupt epoch is overwritten
if n and n > tonumber(ARGV[1]) then
  return {0, cur}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '_epoch', ARGV[1], '_at', ARGV[2])
if fenced then
  redis.call('HSET', KEYS[1], '_fence', ARGV[5])
end
local i = 9
for _ = 1, tonumber(ARGV[8]) do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
end
local k = fenced and 4 or 2
redis.call('DEL', KEYS[k])
if KEYS[k + 1] then
  for o = k + 1, #KEYS do
    redis.call('SADD', KEYS[k], ARGV[i])
    redis.call('DEL', KEYS[o])
    redis.call('HSET', KEYS[o], '_at', ARGV[2])
    local msg = ARGV[i + 1]
    local np = tonumber(ARGV[i + 2])
    i = i + 3
    for _ = 1, np do
      redis.call('HSET', KEYS[o], ARGV[i], ARGV[i + 1])
      i = i + 2
    end
    redis.call('PEXPIRE', KEYS[o], ARGV[7])
    redis.call('PUBLISH', KEYS[o], msg)
  end
  redis.call('PEXPIRE', KEYS[k], ARGV[7])
end
redis.call('PUBLISH', KEYS[1], ARGV[3])
return {1}
`)

// Publisher writes the controller's multipliers to Redis and
// announces them on pub/sub. The wiring adapts it to controller.Publisher
// and controller.Loader.
type Publisher struct {
	c    redis.UniversalClient
	s    Settings
	key  string
	keys []string // the hash, and when fenced the lease and its counter
}

// NewPublisher returns a publisher on c (a single Redis or a
// cluster client). It uses Prefix, MaxMultiplier and Lease from s; a
// Lease whose key is not in the hash's cluster slot is refused.
func NewPublisher(c redis.UniversalClient, s Settings) (*Publisher, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Publisher{c: c, s: s, key: s.key(), keys: []string{s.key()}}
	if l := s.Lease; l != nil {
		if slotOf(l.key) != slotOf(p.key) {
			return nil, fmt.Errorf("%w: lease key %q is not in the cluster slot of %q (use Settings.LeaseKey)",
				ErrInvalid, l.key, p.key)
		}
		p.keys = append(p.keys, l.key, l.fenceKey)
	}
	return p, nil
}

// Key is the Redis hash (and pub/sub channel) the publisher writes.
func (p *Publisher) Key() string { return p.key }

// Publish validates m and, in one script, replaces the hash and publishes
// it, unless Redis holds a newer epoch (ErrStaleEpoch) or, when fenced by a
// Lease, that lease or its fencing token is no longer the current one
// (ErrFenced). An equal epoch is written: the controller republishes every
// period as a heartbeat. Invalid m (see multiplier.Set.Validate) is
// refused with ErrInvalid and nothing is written.
func (p *Publisher) Publish(ctx context.Context, m multiplier.Set) error {
	if err := m.Validate(p.s.MaxMultiplier); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	token, fence := "", uint64(0)
	if l := p.s.Lease; l != nil {
		if token, fence = l.token, l.Fence(); fence == 0 {
			return fmt.Errorf("%w: lease %q never acquired", ErrFenced, l.key)
		}
	}
	own, args, err := publishArgs(p.key, m, token, fence, p.s.StaleAfter.Milliseconds())
	if err != nil {
		return err
	}
	res, err := multPublishScript.Run(ctx, p.c, append(slices.Clip(p.keys), own...), args...).Result()
	if err != nil {
		return fmt.Errorf("coord: publishing multipliers: %w", err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) == 0 {
		return fmt.Errorf("%w: publish: got %T %v", ErrBadReply, res, res)
	}
	switch written, _ := arr[0].(int64); {
	case written == 1 && len(arr) == 1:
		return nil
	case written == 2 && len(arr) == 1:
		return fmt.Errorf("%w: epoch %d, fence %d", ErrFenced, m.Epoch, fence)
	case written == 0 && len(arr) == 2:
		stored, _ := arr[1].(string)
		return fmt.Errorf("%w: epoch %d, redis holds %s", ErrStaleEpoch, m.Epoch, stored)
	}
	return fmt.Errorf("%w: publish: got %v", ErrBadReply, arr)
}
