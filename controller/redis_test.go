package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// cmd/throttled wires the coordination package to the loop as it is: the
// Redis publisher is a Publisher and Loader, the Redis lease a Lease.
var (
	_ controller.Lease     = (*coord.Lease)(nil)
	_ controller.Publisher = (*coord.Publisher)(nil)
	_ controller.Loader    = (*coord.Publisher)(nil)
)

// redisLog records every publish of every replica, in order.
type redisLog struct {
	mu      sync.Mutex
	entries []redisEntry
}

type redisEntry struct {
	replica string
	m       multiplier.Set
	err     error
}

func (l *redisLog) snapshot() []redisEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]redisEntry(nil), l.entries...)
}

func (l *redisLog) count(replica string) (n int) {
	for _, e := range l.snapshot() {
		if e.replica == replica && e.err == nil {
			n++
		}
	}
	return n
}

// recordingPublisher is a controller.Publisher and Loader that logs.
type recordingPublisher struct {
	*coord.Publisher
	name string
	log  *redisLog
}

func (p recordingPublisher) Publish(ctx context.Context, m multiplier.Set) error {
	err := p.Publisher.Publish(ctx, m)
	p.log.mu.Lock()
	p.log.entries = append(p.log.entries, redisEntry{p.name, m, err})
	p.log.mu.Unlock()
	return err
}

// crashableLease forgets to release once crashed, like a killed process.
type crashableLease struct {
	*coord.Lease
	crashed atomic.Bool
}

func (l *crashableLease) Release(ctx context.Context) error {
	if l.crashed.Load() {
		return nil
	}
	return l.Lease.Release(ctx)
}

type redisReplica struct {
	loop   *controller.Loop
	lease  *crashableLease
	cancel context.CancelFunc
	done   chan error
}

// stop ends the replica's Run and waits for it.
func (r *redisReplica) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

const (
	redisPeriod = 250 * time.Millisecond
	redisTTL    = time.Second
)

func startReplica(t *testing.T, c redis.UniversalClient, prefix, name string, log *redisLog) *redisReplica {
	t.Helper()
	law, err := controller.NewLaw(controller.Settings{Period: redisPeriod, Tiers: []controller.Tier{
		{Name: "premium", Priority: 0}, {Name: "standard", Priority: 1}, {Name: "free", Priority: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := coord.NewPublisher(c, coord.Settings{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := coord.NewLease(c, prefix+"leader", redisTTL)
	if err != nil {
		t.Fatal(err)
	}
	r := &redisReplica{lease: &crashableLease{Lease: lease}, done: make(chan error, 1)}
	r.loop, err = controller.NewLoop(law, overloaded{}, recordingPublisher{pub, name, log},
		r.lease, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() { r.done <- r.loop.Run(ctx) }()
	t.Cleanup(func() {
		if r.cancel != nil {
			r.cancel()
		}
	})
	return r
}

// overloaded is a Source that always reports a p99 latency twice its target.
type overloaded struct{}

func (overloaded) Read(context.Context) (controller.Input, error) {
	return controller.Input{Signals: []controller.Signal{{Name: "latency_p99", Value: 2, Target: 1, Valid: true}}}, nil
}

func redisWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLeaderTakeoverOnRedis runs two controller loops on one real Redis
// with the limiter's Lease and MultiplierPublisher: exactly one publishes;
// when it stops (releasing the lease, or crashing without releasing) the
// other takes over within two lease periods and continues the epochs.
func TestLeaderTakeoverOnRedis(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	for i, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "release on stop", true: "crash without release"}[crash], func(t *testing.T) {
			prefix := fmt.Sprintf("takeover%d:", i)
			log := &redisLog{}
			a := startReplica(t, c, prefix, "a", log)
			redisWait(t, 5*time.Second, "a leads", a.loop.Leader)
			b := startReplica(t, c, prefix, "b", log)
			redisWait(t, 10*time.Second, "a publishes 3 times after b started", func() bool { return log.count("a") >= 4 })
			if b.loop.Leader() || log.count("b") != 0 {
				t.Fatalf("b leads (%v) or published (%d times) while a leads", b.loop.Leader(), log.count("b"))
			}
			a.lease.crashed.Store(crash)
			a.stop(t)
			stopped := time.Now()
			redisWait(t, 2*redisTTL, "b leads within two lease periods", b.loop.Leader)
			t.Logf("b took over %v after a stopped", time.Since(stopped).Round(time.Millisecond))
			redisWait(t, 5*time.Second, "b publishes", func() bool { return log.count("b") >= 2 })
			b.stop(t)
			checkTakeover(t, c, prefix, log.snapshot())
		})
	}
}

// checkTakeover: a's publishes, then b's, never interleaved; no publish
// failed; epochs never went back; b continued from a's multipliers (the
// overload goes on, so no multiplier rose); Redis holds b's last.
func checkTakeover(t *testing.T, c redis.UniversalClient, prefix string, log []redisEntry) {
	t.Helper()
	var seq []string
	var last multiplier.Set
	for i, e := range log {
		if e.err != nil {
			t.Fatalf("publish %d by %s failed: %v", i, e.replica, e.err)
		}
		if len(seq) == 0 || seq[len(seq)-1] != e.replica {
			seq = append(seq, e.replica)
		}
		if e.m.Epoch < last.Epoch {
			t.Fatalf("publish %d by %s: epoch %d after %d", i, e.replica, e.m.Epoch, last.Epoch)
		}
		for tier, v := range e.m.Tiers {
			if old, ok := last.Tiers[tier]; ok && v > old {
				t.Fatalf("publish %d by %s: %s rose from %v to %v under overload", i, e.replica, tier, old, v)
			}
		}
		last = e.m
	}
	if got := strings.Join(seq, ","); got != "a,b" {
		t.Fatalf("publishers in order %q, want \"a,b\"", got)
	}
	pub, err := coord.NewPublisher(c, coord.Settings{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := pub.Load(context.Background())
	if err != nil || !found || got.Epoch != last.Epoch || got.Tiers["free"] != last.Tiers["free"] {
		t.Fatalf("Redis holds %+v (found %v, err %v), want b's last publish %+v", got, found, err, last)
	}
}
