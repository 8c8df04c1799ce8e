package bulkhead_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/bulkhead"
)

func Example() {
	m, _ := bulkhead.NewMetrics(prometheus.NewRegistry())
	tiers, _ := bulkhead.NewSet(bulkhead.Settings{Limit: 2}, m)
	free, _ := tiers.Get("free")

	a, _ := free.Acquire(context.Background())
	b, _ := free.Acquire(context.Background())
	_, err := free.Acquire(context.Background())
	fmt.Println("third call:", err, "| 503 bulkhead:", errors.Is(err, bulkhead.ErrFull),
		"| Retry-After:", free.RetryAfter())

	_ = tiers.Resize("free", 1) // shrink below the 2 in flight
	a.Release()
	_, err = free.TryAcquire()
	fmt.Println("after shrink, 1 held:", err)
	b.Release()
	b.Release() // idempotent
	p, err := free.TryAcquire()
	fmt.Println("after both released:", err, free.Stats())
	p.Release()
	// Output:
	// third call: bulkhead: full | 503 bulkhead: true | Retry-After: 1s
	// after shrink, 1 held: bulkhead: full
	// after both released: <nil> {free 1 1 0}
}

func ExampleBreaker() {
	store, _ := bulkhead.NewBreaker("redis", bulkhead.BreakerSettings{ConsecutiveFailures: 2}, nil)
	down := errors.New("connection refused")
	for range 3 {
		err := store.Call(context.Background(), func(ctx context.Context) error { return down })
		fmt.Println(err, "->", store.State())
	}
	// Output:
	// connection refused -> closed
	// connection refused -> open
	// bulkhead: circuit breaker open -> open
}
