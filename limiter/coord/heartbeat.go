package coord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultHeartbeatInterval is how often a Heartbeat beats when
// HeartbeatSettings.Interval is zero. The default liveness window is three
// intervals.
const DefaultHeartbeatInterval = 2 * time.Second

// ErrStopped is returned by Run and Beat on a Heartbeat that was stopped.
var ErrStopped = errors.New("coord: heartbeat stopped")

// HeartbeatSettings configures a Heartbeat. The zero value is ready to use.
type HeartbeatSettings struct {
	// ID names this instance; it must be unique among the instances that
	// share the Redis. Empty means "<hostname>-<pid>-<random>".
	ID string
	// Interval is the time between beats, and the timeout of each beat.
	// Zero means DefaultHeartbeatInterval.
	Interval time.Duration
	// Window is how long an instance counts as live after its last beat;
	// it must be at least Interval. Zero means 3 × Interval.
	Window time.Duration
	// Prefix is the key prefix; the set is "<Prefix>instances". Empty
	// means "throttled:", the stores' default prefix.
	Prefix string
	// Now is the clock of the beats. Nil means Redis TIME, one clock for
	// every instance; set it only in tests (see WithClock).
	Now func() time.Time
	// Tick makes the ticker of Run. Nil means time.NewTicker.
	Tick func(d time.Duration) (c <-chan time.Time, stop func())
}

func (s HeartbeatSettings) normalize() (HeartbeatSettings, error) {
	switch {
	case s.Interval < 0:
		return s, fmt.Errorf("%w: HeartbeatSettings.Interval %v must not be negative", ErrInvalid, s.Interval)
	case s.Window < 0:
		return s, fmt.Errorf("%w: HeartbeatSettings.Window %v must not be negative", ErrInvalid, s.Window)
	}
	if s.Interval == 0 {
		s.Interval = DefaultHeartbeatInterval
	}
	if s.Window == 0 {
		s.Window = 3 * s.Interval
	}
	if s.Window < s.Interval {
		return s, fmt.Errorf("%w: HeartbeatSettings.Window %v is shorter than Interval %v: live instances would expire between beats",
			ErrInvalid, s.Window, s.Interval)
	}
	if s.Window < time.Millisecond {
		return s, fmt.Errorf("%w: HeartbeatSettings.Window %v must be at least 1ms", ErrInvalid, s.Window)
	}
	if s.Prefix == "" {
		s.Prefix = "throttled:"
	}
	if s.ID == "" {
		s.ID = defaultInstanceID()
	}
	if s.Tick == nil {
		s.Tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return s, nil
}

func defaultInstanceID() string { return NewInstanceID() }

// NewInstanceID is a new name for this instance among those sharing a
// Redis: "<hostname>-<pid>-<random>", the default of TallySettings.ID and
// HeartbeatSettings.ID. An instance uses one for its tally and its
// subscriber (Settings.Instance) alike.
func NewInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "instance"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// heartbeatScript records a beat of ARGV[2] at ARGV[1] (ms; "" = Redis TIME),
// forgets members silent for longer than ARGV[3] ms, and returns how many
// are left. The set expires two windows after the last beat of anyone.
var heartbeatScript = redis.NewScript(`
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local w = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - w))
redis.call('PEXPIRE', KEYS[1], 2 * w)
return redis.call('ZCARD', KEYS[1])
`)

// Heartbeat writes this instance into a Redis sorted set (member = ID, score
// = time of the last beat in ms) every Interval, and counts the instances
// that beat within Window. It is the InstanceCounter of the local fallback:
// Instances keeps the last count while Redis is down, which is when the
// fallback needs it.
type Heartbeat struct {
	c   redis.UniversalClient
	s   HeartbeatSettings
	key string
	n   atomic.Int64
	err atomic.Pointer[error]

	mu      sync.Mutex // guards stopped and loops.Add
	stopped bool
	stop    chan struct{}
	loops   sync.WaitGroup
}

// NewHeartbeat returns a heartbeat on c. It does not beat until Beat or Run.
func NewHeartbeat(c redis.UniversalClient, s HeartbeatSettings) (*Heartbeat, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: NewHeartbeat: redis client is nil", ErrInvalid)
	}
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	h := &Heartbeat{c: c, s: s, key: s.Prefix + "instances", stop: make(chan struct{})}
	h.n.Store(1)
	return h, nil
}

// ID is this instance's member name.
func (h *Heartbeat) ID() string { return h.s.ID }

// Key is the Redis key of the set.
func (h *Heartbeat) Key() string { return h.key }

// Instances is the live count seen by the last successful beat, at least 1
// (this instance), and 1 before any beat succeeded.
func (h *Heartbeat) Instances() int { return int(h.n.Load()) }

// Err is the error of the last beat, nil when it succeeded.
func (h *Heartbeat) Err() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Beat writes one beat now and returns the live count. On error the last
// count is kept. After Stop it returns ErrStopped and writes nothing.
func (h *Heartbeat) Beat(ctx context.Context) (int, error) {
	select {
	case <-h.stop:
		return h.Instances(), ErrStopped
	default:
	}
	now := ""
	if h.s.Now != nil {
		now = strconv.FormatInt(h.s.Now().UnixMilli(), 10)
	}
	n, err := heartbeatScript.Run(ctx, h.c, []string{h.key}, now, h.s.ID, h.s.Window.Milliseconds()).Int64()
	if err != nil {
		err = fmt.Errorf("coord: heartbeat: %w", err)
		h.err.Store(&err)
		return h.Instances(), err
	}
	h.n.Store(max(n, 1))
	h.err.Store(nil)
	return int(max(n, 1)), nil
}

// Run beats at once and then every Interval, each beat bounded by Interval,
// until ctx ends (it returns ctx.Err()) or Stop is called (it returns nil).
// Failed beats are kept in Err and do not stop it.
func (h *Heartbeat) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return ErrStopped
	}
	h.loops.Add(1)
	h.mu.Unlock()
	defer h.loops.Done()
	tick, stop := h.s.Tick(h.s.Interval)
	defer stop()
	for {
		bctx, cancel := context.WithTimeout(ctx, h.s.Interval)
		_, _ = h.Beat(bctx)
		cancel()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-h.stop:
			return nil
		case <-tick:
		}
	}
}

// Stop ends Run, waits for it to return, and removes this instance from the
// set so that the others count it out at their next beat. After Stop, Run
// returns ErrStopped; Stop may be called again (to retry the removal).
func (h *Heartbeat) Stop(ctx context.Context) error {
	h.mu.Lock()
	if !h.stopped {
		h.stopped = true
		close(h.stop)
	}
	h.mu.Unlock()
	h.loops.Wait()
	if err := h.c.ZRem(ctx, h.key, h.s.ID).Err(); err != nil {
		return fmt.Errorf("coord: heartbeat: remove %q: %w", h.s.ID, err)
	}
	return nil
}
