package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// TestKeepDialingAfterOutage: after an outage long enough for go-redis to
// stop dialing (PoolSize failed dials in a row; it then probes once a
// second), the first call once Redis answers again succeeds.
func TestKeepDialingAfterOutage(t *testing.T) {
	r := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), PoolSize: 2, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	redisstore.KeepDialing(c)
	s := fbStore(c)
	ready := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return s.Ready(ctx)
	}
	if err := ready(); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	for i := 0; i < 10; i++ { // well past PoolSize failed dials
		if err := ready(); err == nil {
			t.Fatalf("call %d with redis killed succeeded", i)
		}
	}
	r.Start() // returns once redis answers PING
	if err := ready(); err != nil {
		t.Fatalf("first call after redis answered again: %v (the client did not dial)", err)
	}
}
