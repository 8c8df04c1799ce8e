package enforce_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

var storeSeq atomic.Int64

// redisStore is a Redis store under a prefix of its own, with its time
// from clock (nil: Redis TIME).
func redisStore(c redis.UniversalClient, _ *testing.T, clock func() time.Time) limiter.Store {
	opts := []limiter.Option{limiter.WithPrefix(fmt.Sprintf("e%d:", storeSeq.Add(1)))}
	if clock != nil {
		opts = append(opts, limiter.WithClock(clock))
	}
	return redisstore.New(c, opts...)
}
