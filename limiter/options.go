package limiter

import "time"

// Option configures a store. Options that do not apply to a store are
// ignored by it.
type Option func(*options)

type options struct {
	now     func() time.Time
	prefix  string
	maxKeys int
	shards  int
}

// defaults are set here and nowhere else.
func newOptions(opts []Option) options {
	o := options{
		prefix:  "throttled:",
		maxKeys: 1 << 20,
		shards:  64,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithClock makes the store take time from now instead of its own clock.
//
// The in-memory store reads time.Now by default. The Redis store reads Redis
// TIME by default, so that every instance shares one clock; with WithClock it
// passes now to its scripts instead. That is for deterministic tests: in
// production it would bring back the skew between application servers that
// TIME avoids.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithPrefix sets the Redis key prefix (default "throttled:").
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithMaxKeys caps the keys the in-memory store tracks (default 1<<20).
// Requests for keys beyond the cap share one overflow state per shard; keys
// already tracked keep theirs.
func WithMaxKeys(n int) Option { return func(o *options) { o.maxKeys = n } }

// WithShards sets the in-memory store's lock shards (default 64).
func WithShards(n int) Option { return func(o *options) { o.shards = n } }
