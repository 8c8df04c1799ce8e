package policy

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// RedisStore is a Store in Redis, shared by every instance. Its keys share
// one hash tag, so the atomic swap works on Redis Cluster too:
//
//	<prefix>{config}            the current document (JSON)
//	<prefix>{config}:last_good  the last document written through Swap
//	<prefix>{config}:audit      the audit log (LPUSH + LTRIM)
//	<prefix>config:changed      the channel a Swap publishes the version on
type RedisStore struct {
	client  redis.UniversalClient
	keys    []string
	channel string
	limit   int
}

// swapScript compares the current document with the SHA-1 of the expected
// one ("" when absent) and, if equal, writes everything in one step.
var swapScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local sha = ''
if cur then sha = redis.sha1hex(cur) end
if sha ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('LPUSH', KEYS[3], ARGV[3])
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`)

// NewRedisStore returns a Store on client (a *redis.Client,
// *redis.ClusterClient or ring).
func NewRedisStore(client redis.UniversalClient, s StoreSettings) (*RedisStore, error) {
	if client == nil {
		return nil, errors.New("policy: NewRedisStore: nil redis client")
	}
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	p := s.Prefix
	return &RedisStore{
		client:  client,
		keys:    []string{p + "{config}", p + "{config}:last_good", p + "{config}:audit"},
		channel: p + "config:changed",
		limit:   s.AuditLimit,
	}, nil
}

// Key returns the Redis key of the current document.
func (r *RedisStore) Key() string { return r.keys[0] }

// Get implements Store.
func (r *RedisStore) Get(ctx context.Context) (current, lastGood []byte, err error) {
	vals, err := r.client.MGet(ctx, r.keys[0], r.keys[1]).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("policy: redis MGET config: %w", err)
	}
	out := make([][]byte, 2)
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out[0], out[1], nil
}

// Swap implements Store.
func (r *RedisStore) Swap(ctx context.Context, old, next, entry []byte) (bool, error) {
	want := ""
	if old != nil {
		sum := sha1.Sum(old)
		want = hex.EncodeToString(sum[:])
	}
	n, err := swapScript.Run(ctx, r.client, r.keys,
		want, next, entry, strconv.Itoa(r.limit), r.channel, "changed").Int()
	if err != nil {
		return false, fmt.Errorf("policy: redis swap config: %w", err)
	}
	return n == 1, nil
}

// Audit implements Store.
func (r *RedisStore) Audit(ctx context.Context, n int) ([][]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	vals, err := r.client.LRange(ctx, r.keys[2], 0, int64(n-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("policy: redis LRANGE audit: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// Subscribe implements Store. Messages lost while the connection is down
// are made up for by the watcher's poll.
func (r *RedisStore) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ps := r.client.Subscribe(ctx, r.channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("policy: redis SUBSCRIBE %s: %w", r.channel, err)
	}
	out := make(chan struct{}, 1)
	msgs := ps.Channel()
	go func() {
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}
