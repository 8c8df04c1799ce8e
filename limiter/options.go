package limiter

import "time"

// Option configures a store. Options that do not apply to a store are
// ignored by it.
type Option func(*Options)

// Options are the options resolved, defaults applied. Stores in other
// packages (the Redis store) read theirs with NewOptions.
type Options struct {
	Now     func() time.Time // nil: the store's own clock
	Prefix  string
	MaxKeys int
	Shards  int
}

// NewOptions applies opts over the defaults, which are set here and nowhere
// else.
func NewOptions(opts ...Option) Options { return newOptions(opts) }

func newOptions(opts []Option) Options {
	o := Options{
		Prefix:  "throttled:",
		MaxKeys: 1 << 20,
		Shards:  64,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithClock makes the store take time from now instead of its own clock.
//
// The in-memory store reads its own clock by default: the wall time at
// its start plus Go's monotonic clock since, so that a step of the wall
// clock (NTP) neither freezes nor grants refills. The Redis store reads Redis
// TIME by default, so that every instance shares one clock; with WithClock it
// passes now to its scripts instead. That is for deterministic tests: in
// production it would bring back the skew between application servers that
// TIME avoids.
func WithClock(now func() time.Time) Option { return func(o *Options) { o.Now = now } }

// WithPrefix sets the Redis key prefix (default "throttled:").
func WithPrefix(p string) Option { return func(o *Options) { o.Prefix = p } }

// WithMaxKeys caps the keys the in-memory store tracks (default 1<<20).
// Requests for keys beyond the cap share one overflow state per shard, rule
// name and algorithm; keys already tracked keep theirs.
func WithMaxKeys(n int) Option { return func(o *Options) { o.MaxKeys = n } }

// WithShards sets the in-memory store's lock shards (default 64).
func WithShards(n int) Option { return func(o *Options) { o.Shards = n } }
