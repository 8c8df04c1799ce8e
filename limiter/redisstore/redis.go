package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
// cluster each decision is its own EVALSHA in a pipeline per node.
type Store struct {
	c      redis.UniversalClient
	prefix string
	now    func() time.Time // nil: Redis TIME
	err    error            // a bad prefix: every decision fails with it
	set    Settings
	multi  bool // batch scripts: c is a single Redis

	mu       sync.Mutex // guards queue and flushers
	queue    []*job
	flushers int
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
	return &Store{c: c, prefix: o.Prefix, now: o.Now, err: CheckPrefix(o.Prefix), set: s, multi: single}, nil
}

// CheckPrefix reports a key prefix the store cannot use: one with { or },
// which would choose the hash tag (the cluster slot) of every key.
func CheckPrefix(p string) error {
	if strings.ContainsAny(p, "{}") {
		return fmt.Errorf("redisstore: prefix %q must not contain { or }: %w", p, limiter.ErrInvalid)
	}
	return nil
}

// Key is the Redis key that holds the state of key under algorithm alg:
// "<prefix><alg>:{<tag>}:<key>", where tag is a 64-bit FNV-1a hash of key
// in hex. The store, not the key, chooses the hash tag, so a key holding
// braces cannot pick its cluster slot. SlidingWindowLog keeps the units
// admitted in a second key, Key + ":a", in the same slot.
func (r *Store) Key(alg limiter.Algorithm, key string) string {
	h := uint64(14695981039346656037) // FNV-1a, 64 bits
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	code := alg.Code()
	b := make([]byte, 0, len(r.prefix)+len(code)+21+len(key))
	b = append(append(append(b, r.prefix...), code...), ":{"...)
	for s := 60; s >= 0; s -= 4 {
		b = append(b, "0123456789abcdef"[h>>s&0xf])
	}
	b = append(append(b, "}:"...), key...)
	return string(b)
}

// Decide runs the rule's script for the request's key.
func (r *Store) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if r.err != nil {
		return limiter.Decision{}, r.err
	}
	if err := req.Normalize(); err != nil {
		return limiter.Decision{}, err
	}
	now := ""
	if r.now != nil {
		now = strconv.FormatInt(r.now().UnixMicro(), 10)
	}
	alg := req.Rule.Algorithm
	keys := []string{r.Key(alg, req.Key)}
	if alg == limiter.SlidingWindowLog { // the units admitted, in the same slot
		keys = append(keys, keys[0]+":a")
	}
	if req.Peek {
		if d, ok, err := r.peekAbsent(ctx, req, keys[0]); ok || err != nil {
			return d, err
		}
	}
	j := &job{ctx: ctx, keys: keys, alg: int(alg), args: [7]any{now, req.Rule.Limit, periodArg(&req.Rule),
		req.Rule.Capacity(), req.Cost, req.Multiplier, refundArg[b2i(req.Refund)]}}
	res, err := r.run(ctx, j)
	if err != nil {
		return limiter.Decision{}, fmt.Errorf("redisstore: %s: %w", alg, err)
	}
	return decodeReply(&req, res)
}

// run sends j alone (MaxBatch 1) or through the queue.
func (r *Store) run(ctx context.Context, j *job) (any, error) {
	if r.set.MaxBatch == 1 {
		return scripts[j.alg].Run(ctx, r.c, j.keys, j.args[:]...).Result()
	}
	j.done = make(chan struct{})
	if err := r.enqueue(j); err != nil {
		return nil, err
	}
	return wait(ctx, j)
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

// decodeReply checks and reads a script reply {reason, remaining, reset_us,
// retry_us}. It is the one place that reads replies.
func decodeReply(req *limiter.Request, res any) (limiter.Decision, error) {
	arr, ok := res.([]any)
	if !ok || len(arr) != 4 {
		return limiter.Decision{}, fmt.Errorf("%w: want an array of 4 integers, got %T %v", ErrBadReply, res, res)
	}
	var n [4]int64
	for i, x := range arr {
		if n[i], ok = x.(int64); !ok {
			return limiter.Decision{}, fmt.Errorf("%w: element %d is %T, want integer", ErrBadReply, i, x)
		}
	}
	if n[0] < 0 || n[0] >= int64(limiter.NumReasons) || n[1] < 0 || n[2] < 0 || n[3] < 0 {
		return limiter.Decision{}, fmt.Errorf("%w: values out of range: %v", ErrBadReply, n)
	}
	return limiter.DecisionOf(req, limiter.Reason(n[0]), float64(n[1]), float64(n[2]), float64(n[3])), nil
}
