package redisstore_test

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// packed is struct.pack('<d…', f...): the string state of the previous version.
func packed(f ...float64) string {
	b := make([]byte, 0, 8*len(f))
	for _, x := range f {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return string(b)
}

// TestReadsOlderState: the state older versions kept at Key (a hash, then
// a string of packed doubles) is read as the state it holds, moved into
// the key's field of its bucket (doubles and expiry) and deleted, and the
// next decision carries on from the field. Rule: 10/s, burst 5, at t0.
func TestReadsOlderState(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	us := func(d time.Duration) float64 { return float64(t0.Add(d).UnixMicro()) }
	for _, tc := range []struct {
		name        string
		alg         limiter.Algorithm
		hash        []any  // the hash of two versions ago
		str         string // or the string of the previous version
		first, next limiter.Decision
		size        int
	}{
		// 2 tokens 100 ms ago: 3 now.
		{"tb hash", limiter.TokenBucket, []any{"q", 2, "a", 2, "ts", us(-100 * ms)}, "", d(ok, 10, 2, 300*ms, 0), d(ok, 10, 1, 400*ms, 0), 28},
		{"tb string", limiter.TokenBucket, nil, packed(2, 2, us(-100*ms)), d(ok, 10, 2, 300*ms, 0), d(ok, 10, 1, 400*ms, 0), 28},
		// a backlog of 300 ms at t0.
		{"gcra hash", limiter.GCRA, []any{"q", 300_000, "a", 300_000, "ts", us(0)}, "", d(ok, 10, 1, 400*ms, 0), d(ok, 10, 0, 500*ms, 0), 28},
		{"gcra string", limiter.GCRA, nil, packed(300_000, 300_000, us(0)), d(ok, 10, 1, 400*ms, 0), d(ok, 10, 0, 500*ms, 0), 28},
		// level 2 100 ms ago: 1 now.
		{"lb hash", limiter.LeakyBucket, []any{"q", 2, "a", 2, "ts", us(-100 * ms)}, "", d(ok, 10, 3, 200*ms, 0), d(ok, 10, 2, 300*ms, 0), 28},
		{"lb string", limiter.LeakyBucket, nil, packed(2, 2, us(-100*ms)), d(ok, 10, 3, 200*ms, 0), d(ok, 10, 2, 300*ms, 0), 28},
		// 3 in the window that starts at t0.
		{"fw hash", limiter.FixedWindow, []any{"q", 3, "c", 3, "ts", us(0)}, "", d(ok, 10, 6, time.Second, 0), d(ok, 10, 5, time.Second, 0), 28},
		{"fw string", limiter.FixedWindow, nil, packed(3, 3, us(0)), d(ok, 10, 6, time.Second, 0), d(ok, 10, 5, time.Second, 0), 28},
		{"sc hash", limiter.SlidingWindowCounter, []any{"q", 3, "a", 0, "c", 3, "d", 0, "ts", us(0)},
			"", d(ok, 10, 6, 2*time.Second, 0), d(ok, 10, 5, 2*time.Second, 0), 44},
		{"sc string", limiter.SlidingWindowCounter, nil, packed(3, 0, 3, 0, us(0)),
			d(ok, 10, 6, 2*time.Second, 0), d(ok, 10, 5, 2*time.Second, 0), 44},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New(t0)
			s := redisstore.New(c, limiter.WithPrefix(tc.name+":"), limiter.WithClock(clock.Now))
			key, bucket, ctx := s.Key(tc.alg, "k"), s.Bucket(tc.alg, "k"), context.Background()
			var err error
			if tc.hash != nil {
				err = c.HSet(ctx, key, tc.hash...).Err()
			} else {
				err = c.Set(ctx, key, tc.str, time.Hour).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			rule := limiter.Rule{Algorithm: tc.alg, Limit: 10, Period: time.Second, Burst: 5}
			got, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: rule})
			if err != nil || got != tc.first {
				t.Fatalf("from the older state: %+v %v, want %+v", got, err, tc.first)
			}
			if n := c.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("the older state at %s is still there", key)
			}
			if v, err := c.HGet(ctx, bucket, "k").Result(); err != nil || len(v) != tc.size {
				t.Fatalf("field of %d bytes (%v), want %d", len(v), err, tc.size)
			}
			got, err = s.Decide(ctx, limiter.Request{Key: "k", Rule: rule})
			if err != nil || got != tc.next {
				t.Fatalf("from the field: %+v %v, want %+v", got, err, tc.next)
			}
		})
	}
}

// sameBucket returns n client keys that share s's bucket of alg.
func sameBucket(s *redisstore.Store, alg limiter.Algorithm, n int) []string {
	b := s.Bucket(alg, "k0")
	keys := []string{"k0"}
	for i := 1; len(keys) < n; i++ {
		if k := "k" + strconv.Itoa(i); s.Bucket(alg, k) == b {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestBucketSweepsExpiredFields: fields whose time to refill (plus one
// second) has passed are deleted when the 8th new field comes, and live
// ones stay; the bucket's TTL covers its longest-lived field.
func TestBucketSweepsExpiredFields(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	clock := fakeclock.New(t0)
	s := redisstore.New(c, limiter.WithPrefix("sw:"), limiter.WithClock(clock.Now))
	ctx := context.Background()
	short := limiter.Rule{Name: "s", Limit: 10, Period: time.Second, Burst: 10} // full again 100 ms after one request
	long := limiter.Rule{Name: "l", Limit: 1, Period: time.Hour, Burst: 1}      // an hour
	keys := sameBucket(s, limiter.TokenBucket, 9)
	bucket := s.Bucket(limiter.TokenBucket, keys[0])
	decide := func(k string, rule limiter.Rule) {
		t.Helper()
		if _, err := s.Decide(ctx, limiter.Request{Key: k, Rule: rule}); err != nil {
			t.Fatal(err)
		}
	}
	decide(keys[0], long)
	for _, k := range keys[1:6] { // fields 2..6: expire after 1.1 s (whole seconds: by 2 s)
		decide(k, short)
	}
	if ttl := c.PTTL(ctx, bucket).Val(); ttl < 59*time.Minute || ttl > time.Hour+2*time.Second {
		t.Errorf("bucket TTL %v, want the long field's hour (+1 s, whole seconds)", ttl)
	}
	clock.Set(t0.Add(3 * time.Second))
	decide(keys[6], short) // 7 fields
	if n := c.HLen(ctx, bucket).Val(); n != 7 {
		t.Fatalf("%d fields before the 8th new one, want 7", n)
	}
	decide(keys[7], short) // the 8th: sweeps the 5 expired
	if got := c.HKeys(ctx, bucket).Val(); len(got) != 3 {
		t.Fatalf("fields after the sweep %v, want %v", got, []string{keys[0], keys[6], keys[7]})
	}
	if v := c.HExists(ctx, bucket, keys[0]).Val(); !v {
		t.Error("the sweep deleted a live field")
	}
}

// TestRedisKeys: keys carry the prefix and a hash tag of the store's, the
// bucket is in the slot of the key older versions used, and every key has a
// TTL no longer than its time to refill plus one second.
func TestRedisKeys(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	s := redisstore.New(c, limiter.WithPrefix("app:"))
	ctx := context.Background()
	for _, alg := range limiter.Algorithms() {
		rule := limiter.Rule{Algorithm: alg, Limit: 10, Period: 2 * time.Second, Burst: 10}
		if _, err := s.Decide(ctx, limiter.Request{Key: "user:1", Rule: rule, Cost: 3}); err != nil {
			t.Fatal(err)
		}
		key := s.Key(alg, "user:1")
		if !strings.HasPrefix(key, "app:"+alg.Code()+":{") || !strings.HasSuffix(key, "}:user:1") || len(hashTag(key)) != 16 {
			t.Fatalf("%v: key %q: want app:%s:{<16 hex>}:user:1", alg, key, alg.Code())
		}
		if alg != limiter.SlidingWindowLog {
			b := s.Bucket(alg, "user:1")
			if !strings.HasPrefix(b, "app:"+alg.Code()+"{") || !strings.HasSuffix(b, "}") ||
				c.ClusterKeySlot(ctx, b).Val() != c.ClusterKeySlot(ctx, key).Val() {
				t.Fatalf("%v: bucket %q: want app:%s{<tag>} in the slot of %q", alg, b, alg.Code(), key)
			}
			if c.Exists(ctx, key).Val() != 0 || !c.HExists(ctx, b, "user:1").Val() {
				t.Fatalf("%v: the state is not (only) in the field user:1 of %s", alg, b)
			}
			key = b
		}
		ttl, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Refill from 3 spent at 5/s is 600 ms; windows last at most 2
		// periods; a bucket's TTL is in whole seconds.
		if ttl <= 0 || ttl > 2*rule.Period+2*time.Second {
			t.Fatalf("%v: TTL %v, want in (0, %v]", alg, ttl, 2*rule.Period+2*time.Second)
		}
	}
}
