package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// A gate in front of an upstream: premium (priority 0) waits ahead of free
// (priority 2), and takes a free caller's place when the queue is full.
func ExampleGate() {
	gate, _ := bulkhead.NewGate("upstream", bulkhead.GateSettings{Limit: 1, MaxQueue: 1, MaxWait: time.Hour}, nil)
	held, _ := gate.Acquire(context.Background(), 2)

	free := make(chan error)
	go func() {
		_, err := gate.Acquire(context.Background(), 2) // queues
		free <- err
	}()
	for gate.Stats().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	premium := make(chan bulkhead.Permit)
	go func() {
		p, _ := gate.Acquire(context.Background(), 0) // evicts the free caller
		premium <- p
	}()
	fmt.Println("free:", <-free)

	gate.SetLimit(0) // never below MinLimit (1)
	held.Release()   // the permit goes to premium
	p := <-premium
	fmt.Println("limit:", gate.Limit(), "in flight:", gate.InFlight())
	p.Release()
	n, _, _, peak := gate.TakeWindow()
	fmt.Println("samples:", n, "peak:", peak)
	// Output:
	// free: bulkhead: shed
	// limit: 1 in flight: 1
	// samples: 2 peak: 1
}
