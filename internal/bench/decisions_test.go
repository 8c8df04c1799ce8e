package bench

import (
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// Decisions measures a store's decisions from many goroutines: on the
// memory store, and on Redis (GCRA) with the bytes per key of fresh keys.
func TestDecisions(t *testing.T) {
	r := testenv.StartRedis(t)
	for _, tc := range []struct {
		store string
		alg   limiter.Algorithm
		conc  int
		dur   time.Duration
	}{{"memory", limiter.TokenBucket, 4, 200 * time.Millisecond}, {"redis", limiter.GCRA, 8, 300 * time.Millisecond}} {
		s, rdb, err := OpenStore(tc.store, r.URL(), tc.conc, redisstore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		res := Decisions(s, tc.alg, tc.conc, 1024, tc.dur)
		if res.Decisions == 0 || res.Errors != 0 || res.DecisionsPerSec <= 0 || res.P99Micros < res.P50Micros ||
			res.P999Micros < res.P99Micros || res.CPUSeconds <= 0 || res.Algorithm != tc.alg.String() {
			t.Fatalf("%s: %+v", tc.store, res)
		}
		if rdb == nil {
			continue // the memory store has no bytes-per-key figure
		}
		// A key holds at least its name.
		if res.RedisBytesPerKey, err = RedisBytesPerKey(rdb, s, tc.alg, 2000, tc.conc); err != nil ||
			res.RedisBytesPerKey <= float64(len("throttled-bench:gc:{mem:1}")) {
			t.Fatalf("redis_bytes_per_key %v, %v", res.RedisBytesPerKey, err)
		}
		rdb.Close()
	}
	if _, _, err := OpenStore("redis", r.URL(), 1, redisstore.Settings{MaxBatch: -1}); err == nil {
		t.Fatal("negative MaxBatch accepted")
	}
	if _, _, err := OpenStore("etcd", "", 1, redisstore.Settings{}); err == nil {
		t.Fatal("unknown store accepted")
	}
}
