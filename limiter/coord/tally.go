package coord

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTallyWindow is how long an instance's counts stay in a Tally
// after its last Publish when TallySettings.Window is zero.
const DefaultTallyWindow = 10 * time.Second

// TallySettings configures a Tally. The zero value is ready to use.
type TallySettings struct {
	// ID names this instance among those sharing the Redis. Empty means
	// "<hostname>-<pid>-<random>".
	ID string
	// Window: an instance that has not published for this long is dropped
	// from the tally (its counts with it). Zero means DefaultTallyWindow.
	Window time.Duration
	// Prefix is the key prefix; the hash is "<Prefix>tally". Empty means
	// "throttled:".
	Prefix string
	// Now is the clock of the publishes. Nil means Redis TIME, one clock
	// for every instance; set it only in tests.
	Now func() time.Time
}

// Tally shares cumulative counters (name → count) among the instances on
// one Redis: each publishes its own, and any instance reads every live
// instance's. The leader's in-process signals read the fleet's admitted
// requests from it, so that a tier's rate cap, which every instance
// enforces through one bucket, is sized from the fleet's admitted rate and
// not from the leader's share of it.
//
// All counts live in one hash, "<Prefix>tally" (one slot in a cluster):
// field "<id>\n<name>" holds a count, field "<id>\n@" the time of the
// instance's last publish. Each publish drops the instances silent for
// longer than Window.
type Tally struct {
	c   redis.UniversalClient
	s   TallySettings
	key string
}

// NewTally returns a tally on c.
func NewTally(c redis.UniversalClient, s TallySettings) (*Tally, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: NewTally: redis client is nil", ErrInvalid)
	case s.Window < 0:
		return nil, fmt.Errorf("%w: TallySettings.Window %v must not be negative", ErrInvalid, s.Window)
	case strings.Contains(s.ID, "\n"):
		return nil, fmt.Errorf("%w: TallySettings.ID %q must not contain a newline", ErrInvalid, s.ID)
	}
	if s.Window == 0 {
		s.Window = DefaultTallyWindow
	}
	if s.ID == "" {
		s.ID = defaultInstanceID()
	}
	if s.Prefix == "" {
		s.Prefix = "throttled:"
	}
	return &Tally{c: c, s: s, key: s.Prefix + "tally"}, nil
}

// ID is this instance's name in the tally.
func (t *Tally) ID() string { return t.s.ID }

// Key is the Redis key of the hash.
func (t *Tally) Key() string { return t.key }

// tallyScript writes the counts of instance ARGV[3] (name, count pairs from
// ARGV[4]) and its publish time ARGV[1] (ms; "" = Redis TIME), then drops
// the instances whose last publish is older than ARGV[2] ms. The hash
// expires two windows after the last publish of anyone.
var tallyScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local w, id = tonumber(ARGV[2]), ARGV[3]
local set = {'HSET', KEYS[1], id .. '\n@', string.format('%.0f', now)}
for i = 4, #ARGV, 2 do
  set[#set + 1] = id .. '\n' .. ARGV[i]
  set[#set + 1] = ARGV[i + 1]
end
redis.call(unpack(set))
local all = redis.call('HGETALL', KEYS[1])
local stale = {}
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, -2) == '\n@' and tonumber(all[i + 1]) < now - w then
    stale[string.sub(f, 1, -3)] = true
  end
end
for i = 1, #all, 2 do
  local p = string.find(all[i], '\n', 1, true)
  if p and stale[string.sub(all[i], 1, p - 1)] then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
redis.call('PEXPIRE', KEYS[1], 2 * w)
return 1
`)

// Publish writes this instance's counts (names must not contain a newline
// or be "@"), replacing those it published before under the same names.
func (t *Tally) Publish(ctx context.Context, counts map[string]float64) error {
	args := make([]any, 0, 3+2*len(counts))
	now := ""
	if t.s.Now != nil {
		now = strconv.FormatInt(t.s.Now().UnixMilli(), 10)
	}
	args = append(args, now, t.s.Window.Milliseconds(), t.s.ID)
	for name, v := range counts {
		if name == "@" || name == "" || strings.Contains(name, "\n") {
			return fmt.Errorf("%w: tally: counter name %q", ErrInvalid, name)
		}
		args = append(args, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	if err := tallyScript.Run(ctx, t.c, []string{t.key}, args...).Err(); err != nil {
		return fmt.Errorf("coord: tally: publish: %w", err)
	}
	return nil
}

// Read returns the counts of every instance in the tally, by instance ID
// then name, as last published (instances silent for longer than Window
// are dropped by the next Publish of anyone).
func (t *Tally) Read(ctx context.Context) (map[string]map[string]float64, error) {
	all, err := t.c.HGetAll(ctx, t.key).Result()
	if err != nil {
		return nil, fmt.Errorf("coord: tally: read: %w", err)
	}
	out := make(map[string]map[string]float64)
	for f, v := range all {
		id, name, ok := strings.Cut(f, "\n")
		if !ok || name == "@" {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("coord: tally: read %q: %w", f, err)
		}
		if out[id] == nil {
			out[id] = make(map[string]float64)
		}
		out[id][name] = n
	}
	return out, nil
}
