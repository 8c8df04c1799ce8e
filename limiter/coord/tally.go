package coord

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	// Window: an instance that has not published for this long is left
	// out of Read, which deletes its counts. Zero means DefaultTallyWindow.
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
// instance's last publish. A publish writes only its own fields, so its
// cost does not grow with the fleet (every instance publishes ten times a
// controller period); Read, the leader's once a period, leaves out and
// deletes the instances silent for longer than Window.
type Tally struct {
	c   redis.UniversalClient
	s   TallySettings
	key string

	mu    sync.Mutex          // guards names
	names map[string]struct{} // every name this instance published, for Remove
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
// ARGV[4]) and its publish time ARGV[1] (ms; "" = Redis TIME). The hash
// expires two windows (ARGV[2] ms) after the last publish of anyone.
var tallyScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local id = ARGV[3]
local set = {'HSET', KEYS[1], id .. '\n@', string.format('%.0f', now)}
for i = 4, #ARGV, 2 do
  set[#set + 1] = id .. '\n' .. ARGV[i]
  set[#set + 1] = ARGV[i + 1]
end
redis.call(unpack(set))
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))
return 1
`)

// tallyReadScript returns the time (ms), then the hash's fields and values
// (HGETALL) less those of the instances whose last publish is older than
// ARGV[2] ms before ARGV[1] (ms; "" = Redis TIME), and deletes those.
var tallyReadScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local w = tonumber(ARGV[2])
local all = redis.call('HGETALL', KEYS[1])
local stale = {}
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, -2) == '\n@' and tonumber(all[i + 1]) < now - w then
    stale[string.sub(f, 1, -3)] = true
  end
end
local live, gone = {string.format('%.0f', now)}, {'HDEL', KEYS[1]}
for i = 1, #all, 2 do
  local p = string.find(all[i], '\n', 1, true)
  if p and stale[string.sub(all[i], 1, p - 1)] then
    gone[#gone + 1] = all[i]
  else
    live[#live + 1] = all[i]
    live[#live + 1] = all[i + 1]
  end
end
if #gone > 2 then
  redis.call(unpack(gone))
end
return live
`)

// Publish writes this instance's counts (names must not contain a newline
// or be "@"), replacing those it published before under the same names.
func (t *Tally) Publish(ctx context.Context, counts map[string]float64) error {
	args := make([]any, 0, 3+2*len(counts))
	args = append(args, t.now(), t.s.Window.Milliseconds(), t.s.ID)
	for name, v := range counts {
		if name == "@" || name == "" || strings.Contains(name, "\n") {
			return fmt.Errorf("%w: tally: counter name %q", ErrInvalid, name)
		}
		args = append(args, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	t.mu.Lock()
	if t.names == nil {
		t.names = map[string]struct{}{}
	}
	for name := range counts {
		t.names[name] = struct{}{}
	}
	t.mu.Unlock()
	if err := tallyScript.Run(ctx, t.c, []string{t.key}, args...).Err(); err != nil {
		return fmt.Errorf("coord: tally: publish: %w", err)
	}
	return nil
}

// Read returns the counts of every live instance in the tally, by
// instance ID then name, as last published; it deletes the instances
// silent for longer than Window.
func (t *Tally) Read(ctx context.Context) (map[string]map[string]float64, error) {
	r, err := t.ReadAll(ctx)
	return r.Counts, err
}

// TallyReading is what ReadAll returns.
type TallyReading struct {
	Counts map[string]map[string]float64 // by instance ID, then name
	// Age is the time since each instance's last publish (Redis's clock,
	// or the settings' Now).
	Age map[string]time.Duration
}

// ReadAll is Read with the age of each instance's last publish: a reader
// may leave out the gauges of an instance that has stopped publishing
// (killed) before Window drops it.
func (t *Tally) ReadAll(ctx context.Context) (TallyReading, error) {
	all, err := tallyReadScript.Run(ctx, t.c, []string{t.key}, t.now(), t.s.Window.Milliseconds()).StringSlice()
	if err != nil {
		return TallyReading{}, fmt.Errorf("coord: tally: read: %w", err)
	}
	if len(all)%2 != 1 {
		return TallyReading{}, fmt.Errorf("%w: tally: read: %d fields and values", ErrBadReply, len(all)-1)
	}
	now, err := strconv.ParseInt(all[0], 10, 64)
	if err != nil {
		return TallyReading{}, fmt.Errorf("%w: tally: read: time %q", ErrBadReply, all[0])
	}
	r := TallyReading{Counts: map[string]map[string]float64{}, Age: map[string]time.Duration{}}
	for i := 1; i < len(all); i += 2 {
		f, v := all[i], all[i+1]
		id, name, ok := strings.Cut(f, "\n")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return TallyReading{}, fmt.Errorf("coord: tally: read %q: %w", f, err)
		}
		if name == "@" {
			r.Age[id] = time.Duration(now-int64(n)) * time.Millisecond
			continue
		}
		if r.Counts[id] == nil {
			r.Counts[id] = make(map[string]float64)
		}
		r.Counts[id][name] = n
	}
	return r, nil
}

// Remove deletes this instance's counts from the tally (an instance that
// stops), so that readers need not wait for Window to drop them.
func (t *Tally) Remove(ctx context.Context) error {
	t.mu.Lock()
	fields := []string{t.s.ID + "\n@"}
	for name := range t.names {
		fields = append(fields, t.s.ID+"\n"+name)
	}
	t.mu.Unlock()
	if err := t.c.HDel(ctx, t.key, fields...).Err(); err != nil {
		return fmt.Errorf("coord: tally: remove %q: %w", t.s.ID, err)
	}
	return nil
}

// now is the publish or read time for the scripts: "" (Redis TIME) unless
// the settings have a clock.
func (t *Tally) now() string {
	if t.s.Now == nil {
		return ""
	}
	return strconv.FormatInt(t.s.Now().UnixMilli(), 10)
}
