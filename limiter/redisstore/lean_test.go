package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// TestNewBucketReadsOnlyItsField: a decision on a key Redis does not hold
// reads its bucket's field and nothing else (no key of an older layout: no
// GET, HMGET or DEL per new bucket), batched and unbatched.
func TestNewBucketReadsOnlyItsField(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	for _, batch := range []int{0, 1} {
		s, err := redisstore.NewWithSettings(c, redisstore.Settings{MaxBatch: batch}, limiter.WithPrefix("nb:"))
		if err != nil {
			t.Fatal(err)
		}
		for _, alg := range limiter.Algorithms() {
			if alg == limiter.SlidingWindowLog { // its state is its own keys
				continue
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rule := limiter.Rule{Algorithm: alg, Limit: 10, Period: time.Second}
			for i := range 16 {
				k := strconv.Itoa(batch) + "k" + strconv.Itoa(i)
				if _, err := s.Decide(ctx, limiter.Request{Key: k, Rule: rule}); err != nil {
					t.Fatal(err)
				}
			}
			if n := testenv.CommandCalls(t, c, "hget"); n != 16 {
				t.Fatalf("%v (MaxBatch %d): %d HGET for 16 new keys, want 16", alg, batch, n)
			}
			for _, cmd := range []string{"get", "hmget", "del"} {
				if n := testenv.CommandCalls(t, c, cmd); n != 0 {
					t.Errorf("%v (MaxBatch %d): %d %s for 16 new keys, want none", alg, batch, n, strings.ToUpper(cmd))
				}
			}
		}
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
	if ttl := c.PTTL(ctx, bucket).Val(); ttl < 59*time.Minute || ttl > time.Hour+2*time.Second+redisstore.BucketTTLGrid {
		t.Errorf("bucket TTL %v, want the long field's hour (+1 s, whole seconds, up to the grid)", ttl)
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
// TTL no longer than its time to refill plus one second (a bucket's up to
// the next multiple of BucketTTLGrid).
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
		// periods; a field's expiry is in whole seconds, its bucket's on
		// the grid.
		most := 2*rule.Period + 2*time.Second
		if alg != limiter.SlidingWindowLog {
			most += redisstore.BucketTTLGrid
		}
		if ttl <= 0 || ttl > most {
			t.Fatalf("%v: TTL %v, want in (0, %v]", alg, ttl, most)
		}
	}
}
