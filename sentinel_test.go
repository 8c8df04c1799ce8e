package throttled

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// loadEvent is one decision of sentinelLoad.
type loadEvent struct {
	at                time.Time
	instance          int
	allowed, fallback bool
}

// sentinelLoad decides on one key every 5 ms (at most 200 a second; fewer
// while decisions wait out the fallback deadline), alternating
// between the instances, until stop; it records every decision.
type sentinelLoad struct {
	mu     sync.Mutex
	events []loadEvent
}

func (l *sentinelLoad) run(t *testing.T, stop <-chan struct{}, instances ...*Instance) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		n := i % len(instances)
		d, err := instances[n].store.Decide(context.Background(), limiter.Request{Key: "sentinel-load", Rule: perSecond5})
		if err != nil {
			t.Errorf("decision: %v", err)
			return
		}
		l.mu.Lock()
		l.events = append(l.events, loadEvent{time.Now(), n, d.Allowed, d.Fallback})
		l.mu.Unlock()
	}
}

// sharedSince is when each of n instances first decided from Redis after
// since (zero: not yet).
func (l *sentinelLoad) sharedSince(since time.Time, n int) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := make([]time.Time, n)
	for _, e := range l.events {
		if !e.fallback && e.at.After(since) && first[e.instance].IsZero() {
			first[e.instance] = e.at
		}
	}
	return first
}

// TestRedisSentinelFailover: two instances find their Redis through Redis
// Sentinel (redis.sentinel.{master,addrs,password}, redis.password). Under
// up to 200 decisions a second on a rule of 5 a second (burst 5) the master is
// SIGKILLed; the sentinel promotes the replica, and both instances decide
// from Redis again within 5 s of the promotion. Meanwhile nothing is
// admitted beyond the documented bound: the rule's own (burst + rate × t)
// plus, from the kill on, each instance's local share (fallback.LocalRule:
// ceil(burst/2) + ceil(rate/2) × t).
func TestRedisSentinelFailover(t *testing.T) {
	const sentinelPassword = "Sentinel-pw-41d2"
	sn := testenv.StartSentinel(t, prodPassword, sentinelPassword)
	env := []string{"THROTTLED_REDIS_SENTINEL_MASTER=" + testenv.SentinelMaster,
		"THROTTLED_REDIS_SENTINEL_ADDRS=" + sn.Addr(), "THROTTLED_REDIS_SENTINEL_PASSWORD=" + sentinelPassword,
		"THROTTLED_REDIS_PASSWORD=" + prodPassword, "THROTTLED_FALLBACK_INSTANCES=2"}
	var log testenv.SyncBuffer
	a, b := startInstance(t, &log, env...), startInstance(t, &log, env...)
	waitShared(t, a)
	waitShared(t, b)
	assertShared(t, a, b)

	var load sentinelLoad
	stop, done := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() { defer close(done); load.run(t, stop, a, b) }()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	time.Sleep(time.Second)
	killed := time.Now()
	sn.Master.Kill()
	promoted := sn.WaitPromoted(t)
	testenv.WaitFor(t, 20*time.Second, "shared decisions on both instances after the promotion", func() bool {
		first := load.sharedSince(promoted, 2)
		return !first[0].IsZero() && !first[1].IsZero()
	})
	for i, at := range load.sharedSince(promoted, 2) {
		t.Logf("instance %d: shared decisions %v after the promotion (%v after the kill)", i,
			at.Sub(promoted).Round(time.Millisecond), at.Sub(killed).Round(time.Millisecond))
		if at.Sub(promoted) > 5*time.Second {
			t.Errorf("instance %d decided from Redis again %v after the promotion, want within 5s", i, at.Sub(promoted))
		}
	}
	time.Sleep(time.Second)
	close(stop)
	<-done
	end := time.Now()
	checkSentinelBound(t, load.events, end.Sub(start), end.Sub(killed))
	noPassword(t, log.String())
}

// checkSentinelBound holds the admitted decisions of a load that ran for
// total, the last outage of it on the fallback, to the documented bound.
func checkSentinelBound(t *testing.T, events []loadEvent, total, outage time.Duration) {
	t.Helper()
	admitted, fallbacks := 0, 0
	for _, e := range events {
		if e.allowed {
			admitted++
		}
		if e.fallback {
			fallbacks++
		}
	}
	r := perSecond5
	rate := float64(r.Limit) / r.Period.Seconds()
	share := math.Ceil(float64(r.Burst)/2) + math.Ceil(rate/2)*outage.Seconds()
	bound := float64(r.Burst) + rate*total.Seconds() + 2*share
	t.Logf("%d decisions in %v, %d from the fallback; admitted %d, bound %.1f",
		len(events), total.Round(time.Millisecond), fallbacks, admitted, bound)
	if fallbacks == 0 {
		t.Fatal("no decision from the fallback: the master's death went unnoticed")
	}
	if float64(admitted) > bound {
		t.Errorf("admitted %d, over the documented bound %.1f", admitted, bound)
	}
}
