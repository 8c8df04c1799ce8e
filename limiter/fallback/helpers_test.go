package fallback_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// t0 is aligned to a second, so 1 s windows start at t0.
var t0 = time.Unix(1_700_000_000, 0)

var fbSeq atomic.Int64

// fbStore is a Redis store under a prefix of its own.
func fbStore(c redis.UniversalClient) *redisstore.Store {
	return redisstore.New(c, limiter.WithPrefix(fmt.Sprintf("fb%d:", fbSeq.Add(1))))
}
