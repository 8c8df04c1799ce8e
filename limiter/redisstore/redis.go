package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
)

// ErrBadReply reports a Redis reply of an unexpected shape.
var ErrBadReply = errors.New("redisstore: unexpected reply from redis")

// Store is the shared store: one Lua script call per decision, so every
// instance that uses the same Redis (or Redis Cluster) shares one truth.
// Concurrent decisions are coalesced into pipelines (see Settings): on a
// single Redis one batch script per algorithm decides a whole batch; on a
// cluster each decision is its own EVALSHA in a pipeline per node, and
// each master has its own queue and pipelines (lane.go).
type Store struct {
	c      redis.UniversalClient
	prefix string
	now    func() time.Time // nil: Redis TIME
	err    error            // a bad prefix: every decision fails with it
	set    Settings
	multi  bool // batch scripts: c is a single Redis
	alone  bool // a lone decision may be sent from its caller: c honours deadlines, no CallTimeout
	mult   atomic.Pointer[multCache]
	lanes  lanes
}

// New returns a store on c, a single Redis or a cluster client, with the
// default Settings.
// Options: limiter.WithPrefix, limiter.WithClock (tests only, see WithClock).
// A prefix that CheckPrefix refuses makes every decision (and Ready) fail.
func New(c redis.UniversalClient, opts ...limiter.Option) *Store {
	s, _ := NewWithSettings(c, Settings{}, opts...) // zero Settings are valid
	return s
}

// NewWithSettings is New with batching tuned by s; it fails with
// ErrBadSettings when s is out of range.
func NewWithSettings(c redis.UniversalClient, s Settings, opts ...limiter.Option) (*Store, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	o := limiter.NewOptions(opts...)
	_, single := c.(*redis.Client)
	r := &Store{c: c, prefix: o.Prefix, now: o.Now, err: CheckPrefix(o.Prefix), set: s, multi: single}
	r.alone = r.HonoursDeadlines() == nil && s.CallTimeout == 0
	r.lanes.cluster, _ = c.(*redis.ClusterClient)
	return r, nil
}

// CheckPrefix reports a key prefix the store cannot use: one with { or },
// which would choose the hash tag (the cluster slot) of every key.
func CheckPrefix(p string) error {
	if strings.ContainsAny(p, "{}") {
		return fmt.Errorf("redisstore: prefix %q must not contain { or }: %w", p, limiter.ErrInvalid)
	}
	return nil
}

// Key is "<prefix><alg>:{<tag>}:<key>", where tag is a 64-bit FNV-1a hash
// of key in hex: the Redis key of SlidingWindowLog's state (a sorted set;
// the units admitted are in Key + ":a", in the same slot), and the key
// whose slot is the bucket's (see Bucket). The
// store, not the key, chooses the hash tag, so a key holding braces cannot
// pick its cluster slot.
func (r *Store) Key(alg limiter.Algorithm, key string) string {
	return string(r.appendKey(make([]byte, 0, len(r.prefix)+23+len(key)), alg, key))
}

// appendKey appends Key(alg, key) to b.
func (r *Store) appendKey(b []byte, alg limiter.Algorithm, key string) []byte {
	h := fnvHex(key)
	b = append(append(append(b, r.prefix...), alg.Code()...), ":{"...)
	return append(append(append(b, h[:]...), "}:"...), key...)
}

// Decide runs the rule's script for the request's key.
func (r *Store) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if r.err != nil {
		return limiter.Decision{}, r.err
	}
	if err := req.Normalize(); err != nil {
		return limiter.Decision{}, err
	}
	if req.Peek {
		if d, ok, err := r.peekAbsent(ctx, req); ok || err != nil {
			return d, err
		}
	}
	rep, err := r.run(ctx, r.newJob(ctx, &req))
	if err != nil {
		return limiter.Decision{}, fmt.Errorf("redisstore: %s: %w", req.Rule.Algorithm, err)
	}
	return decision(&req, rep)
}

// run sends j unbatched (MaxBatch 1), alone from this goroutine when a
// pipeline is free and nothing waits (sendAlone), or through the queue, and
// releases it.
func (r *Store) run(ctx context.Context, j *job) ([4]int64, error) {
	if r.set.MaxBatch == 1 {
		defer j.release()
		res, err := scripts[j.alg].Run(ctx, r.c, j.keyStrings(), j.appendArgs(nil)...).Result()
		if err != nil {
			return [4]int64{}, err
		}
		return replyInts(res)
	}
	l := r.lanes.of(ctx, j)
	alone, err := r.enqueue(l, j)
	if err != nil {
		j.release()
		return [4]int64{}, err
	}
	if !alone {
		return j.await(ctx)
	}
	r.sendAlone(ctx, l, j)
	rep, err := j.rep, j.err
	j.release()
	return rep, err
}

// HonoursDeadlines reports an error when the go-redis client ignores
// context deadlines: a stalled Redis would then hold every decision for the
// client's ReadTimeout (5 s by default), whatever a caller's deadline says.
func (r *Store) HonoursDeadlines() error {
	on := true
	switch c := r.c.(type) {
	case *redis.Client:
		on = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		on = c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		on = c.Options().ContextTimeoutEnabled
	}
	if !on {
		return errors.New("redisstore: the Redis client must set ContextTimeoutEnabled, " +
			"or a stalled Redis holds each decision for its ReadTimeout whatever the deadline")
	}
	return nil
}

var refundArg = [2]string{"", "1"}

// periodArg is the period in µs, or -1 for the UTC calendar month (see
// lua/fixed_window.lua).
func periodArg(r *limiter.Rule) int64 {
	if r.CalendarMonth() {
		return -1
	}
	return int64(r.Period / time.Microsecond)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
