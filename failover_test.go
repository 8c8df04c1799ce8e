package throttled

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/multiplier"
	"github.com/throttledhq/throttled/policy"
)

// killableLease is the Redis lease of a replica that can be SIGKILLed: once
// killed it never releases, so the lease stays until its TTL runs out.
type killableLease struct {
	*coord.Lease
	killed atomic.Bool
}

func (l *killableLease) Release(ctx context.Context) error {
	if l.killed.Load() {
		return nil
	}
	return l.Lease.Release(ctx)
}

// overloadSource always reports latency at twice its target.
type overloadSource struct{}

func (overloadSource) Read(context.Context) (controller.Input, error) {
	return controller.Input{Signals: []controller.Signal{{Name: "latency_p99", Value: 2, Target: 1, Valid: true}}}, nil
}

// publishLog records every successful publish with its replica.
type publishLog struct {
	mu   sync.Mutex
	sets []loggedSet
}

type loggedSet struct {
	replica string
	set     multiplier.Set
}

type loggingPublisher struct {
	*coord.Publisher
	name string
	log  *publishLog
}

func (p loggingPublisher) Publish(ctx context.Context, m multiplier.Set) error {
	err := p.Publisher.Publish(ctx, m)
	if err == nil {
		p.log.mu.Lock()
		p.log.sets = append(p.log.sets, loggedSet{p.name, m})
		p.log.mu.Unlock()
	}
	return err
}

func (l *publishLog) snapshot() []loggedSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedSet(nil), l.sets...)
}

// replica is one controller as `serve` builds it (law, publisher, lease of
// the config), with a lease that a kill leaves behind.
type replica struct {
	loop   *controller.Loop
	lease  *killableLease
	cancel context.CancelFunc
	done   chan struct{}
}

func startReplica(t *testing.T, cfg *config.Config, c redis.UniversalClient, name string, log *publishLog) *replica {
	t.Helper()
	law, err := controller.NewLaw(config.ControllerSettings(cfg, cfg.Tiers))
	if err != nil {
		t.Fatal(err)
	}
	// As serve wires them: the lease fences the publishes.
	cs := coord.Settings{Prefix: cfg.Redis.Prefix}
	l, err := coord.NewLease(c, cs.LeaseKey(), cfg.Controller.LeaseTTL.D())
	if err != nil {
		t.Fatal(err)
	}
	cs.Lease = l
	pub, err := coord.NewPublisher(c, cs)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{lease: &killableLease{Lease: l}, done: make(chan struct{})}
	if r.loop, err = controller.NewLoop(law, overloadSource{}, loggingPublisher{pub, name, log}, r.lease,
		prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { defer close(r.done); _ = r.loop.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// kill stops the replica as SIGKILL would: no lease release.
func (r *replica) kill() {
	r.lease.killed.Store(true)
	r.cancel()
	<-r.done
}

// TestLeaderKilledDuringOverloadKeepsShedding: with the default
// stale_after and lease_ttl, a leader killed during an overload (its lease
// left to expire) is replaced before the enforcers' multipliers go stale:
// the free tier's multiplier, as an enforcer's subscriber applies it, is
// never read as 1 between the kill and the new leader's first publish.
func TestLeaderKilledDuringOverloadKeepsShedding(t *testing.T) {
	cfg := configtest.Serve(t, "http://127.0.0.1:1", "redis://127.0.0.1:1")
	cfg.Controller.Period = policy.Duration(400 * time.Millisecond)
	cfg.Controller.LeaseTTL, cfg.Controller.MultiplierStaleAfter = 0, 0
	cfg.SetDefaults()
	if errs := cfg.Validate(); errs != nil {
		t.Fatalf("defaults do not validate: %v", errs)
	}
	c := testenv.StartRedis(t).Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	s := &Instance{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), reg: reg, gather: reg, rdb: c}
	if err := s.buildMultipliers(ctx); err != nil {
		t.Fatal(err)
	}
	for _, run := range s.runners {
		go func() { _ = run(ctx) }()
	}
	log := &publishLog{}
	a := startReplica(t, cfg, c, "a", log)
	testenv.WaitFor(t, 10*time.Second, "the enforcer applies a cut of free", func() bool { return s.mults.Multiplier("free") < 1 })
	b := startReplica(t, cfg, c, "b", log)
	testenv.WaitFor(t, 5*time.Second, "a leads and b follows", func() bool { return a.loop.Leader() && !b.loop.Leader() })

	var readsOf1, reads atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s.mults.Multiplier("free") == 1 {
				readsOf1.Add(1)
			}
			reads.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	a.kill()
	killed := time.Now()
	firstOfB := func() (loggedSet, bool) {
		for _, e := range log.snapshot() {
			if e.replica == "b" {
				return e, true
			}
		}
		return loggedSet{}, false
	}
	testenv.WaitFor(t, 10*time.Second, "b publishes", func() bool { _, ok := firstOfB(); return ok })
	bFirst, _ := firstOfB()
	testenv.WaitFor(t, 5*time.Second, "the enforcer applies b's set", func() bool {
		return s.mults.src.(*coord.Subscriber).Snapshot().Epoch >= bFirst.set.Epoch
	})
	close(stop)
	<-sampled
	var aLast loggedSet
	for _, e := range log.snapshot() {
		if e.replica == "a" {
			aLast = e
		}
	}
	gap := bFirst.set.At.Sub(aLast.set.At)
	t.Logf("b published %v after a's last set (%v after the kill); stale_after %v, lease_ttl %v; %d reads",
		gap, bFirst.set.At.Sub(killed), cfg.Controller.MultiplierStaleAfter, cfg.Controller.LeaseTTL, reads.Load())
	if n := readsOf1.Load(); n > 0 {
		t.Errorf("the free multiplier was read as 1 in %d of %d reads during the failover", n, reads.Load())
	}
	if gap > cfg.Controller.MultiplierStaleAfter.D() {
		t.Errorf("no set was published for %v, longer than stale_after %v", gap, cfg.Controller.MultiplierStaleAfter)
	}
}

func TestConfigStaleAfterOutlivesFailover(t *testing.T) {
	c, err := config.Parse([]byte(testenv.ReadmeConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Controller.MultiplierStaleAfter.D(), c.Controller.LeaseTTL.D()+2*c.Controller.Period.D(); got != want || want != 25*time.Second {
		t.Fatalf("default stale_after %v, want lease_ttl + 2 × period = %v (25s)", got, want)
	}
	short := testenv.ReadmeConfig + "controller:\n  period: 1s\n  lease_ttl: 3s\n  stale_after: 4s\n"
	if _, err := config.Parse([]byte(short), nil); err == nil || !strings.Contains(err.Error(), "controller.stale_after") ||
		!strings.Contains(err.Error(), "5s") {
		t.Fatalf("stale_after 4s with lease_ttl 3s and period 1s: err %v, want controller.stale_after at least 5s", err)
	}
}
