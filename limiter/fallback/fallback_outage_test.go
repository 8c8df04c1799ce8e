package fallback_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
)

// fbLoad drives 16 workers through one Fallback; workers take the local,
// allow and deny policies in turn. Times are offsets from begin.
type fbLoad struct {
	f                    *fallback.Store
	begin                time.Time
	outageAt             atomic.Int64 // the store is down from here on; 0: not yet
	recovering           atomic.Int64 // the store may answer from here on; 0: not yet
	recoverAt            atomic.Int64 // the store answers from here on; 0: not yet
	firstShared          atomic.Int64 // first shared decision started after recoverAt
	maxLatency           atomic.Int64
	sharedBefore, inFall atomic.Int64
	stop                 atomic.Bool
	wg                   sync.WaitGroup

	// per worker, the local policy's fallback decisions: admitted, refused,
	// and the offsets of the first and last
	localAllowed, localRefused, localFirst, localLast [fbWorkers]atomic.Int64

	mu       sync.Mutex
	failures []string
}

const fbWorkers = 16

func (l *fbLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

func (l *fbLoad) start() {
	l.begin = time.Now()
	for w := range fbWorkers {
		rule := limiter.Rule{Name: "r", Limit: 200, Period: time.Second,
			Fallback: []limiter.FallbackPolicy{limiter.FallbackLocal, limiter.FallbackAllow, limiter.FallbackDeny}[w%3]}
		req := limiter.Request{Key: fmt.Sprintf("k%d", w), Rule: rule}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; i < 20_000 && !l.stop.Load(); i++ {
				l.one(w, req)
				time.Sleep(time.Millisecond)
			}
		}()
	}
}

func (l *fbLoad) one(w int, req limiter.Request) {
	start := int64(time.Since(l.begin))
	d, err := l.f.Decide(context.Background(), req)
	end := int64(time.Since(l.begin))
	for m := l.maxLatency.Load(); end-start > m && !l.maxLatency.CompareAndSwap(m, end-start); m = l.maxLatency.Load() {
	}
	out, recStart, rec := l.outageAt.Load(), l.recovering.Load(), l.recoverAt.Load()
	switch {
	case err != nil:
		l.fail("%s: error %v", req.Rule.Fallback, err)
	case d.Fallback:
		l.inFall.Add(1)
		if req.Rule.Fallback == limiter.FallbackLocal {
			l.countLocal(w, d.Allowed, start)
		}
		if (req.Rule.Fallback == limiter.FallbackAllow && !d.Allowed) ||
			(req.Rule.Fallback == limiter.FallbackDeny && (d.Reason != limiter.Shed || d.RetryAfter != time.Second)) {
			l.fail("%s: fallback decision %+v breaks the policy", req.Rule.Fallback, d)
		}
	case out == 0:
		l.sharedBefore.Add(1)
	case start > out && recStart == 0:
		l.fail("shared decision %+v made %v into the outage", d, time.Duration(start-out))
	case rec > 0 && start >= rec:
		l.firstShared.CompareAndSwap(0, start)
	}
}

func (l *fbLoad) countLocal(w int, allowed bool, at int64) {
	if allowed {
		l.localAllowed[w].Add(1)
	} else {
		l.localRefused[w].Add(1)
	}
	l.localFirst[w].CompareAndSwap(0, at)
	l.localLast[w].Store(at)
}

// checkLocalShare: each client of the local policy was admitted no more
// than its share of the rule (limit ÷ instances, in burst and rate) over the
// time it was decided locally, and refused beyond it.
func (l *fbLoad) checkLocalShare(t *testing.T, rule limiter.Rule, instances int) {
	t.Helper()
	share := (rule.Capacity() + int64(instances) - 1) / int64(instances) // burst and rate alike: the rule's burst is its limit
	for w := range fbWorkers {
		if w%3 != 0 {
			continue
		}
		span := time.Duration(l.localLast[w].Load() - l.localFirst[w].Load())
		most := share + int64(float64(share)*span.Seconds()/rule.Period.Seconds()) + 1
		if got := l.localAllowed[w].Load(); got > most || l.localRefused[w].Load() == 0 {
			t.Errorf("worker %d: the local fallback admitted %d and refused %d over %v, want at most %d admitted "+
				"(its share: %d + %d/%v) and the rest refused", w, got, l.localRefused[w].Load(), span, most,
				share, share, rule.Period)
		}
	}
}

// run runs the load through a healthy period, outage and recovery.
func (l *fbLoad) run(t *testing.T, outage, recovery func()) {
	l.warmUp(t)
	l.start()
	time.Sleep(200 * time.Millisecond)
	outage()
	l.outageAt.Store(int64(time.Since(l.begin)))
	time.Sleep(600 * time.Millisecond)
	l.recovering.Store(int64(time.Since(l.begin)))
	recovery()
	l.recoverAt.Store(int64(time.Since(l.begin)))
	for i := 0; i < 100 && l.firstShared.Load() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	l.stop.Store(true)
	l.wg.Wait()

	for _, f := range l.failures {
		t.Error(f)
	}
	l.checkLocalShare(t, limiter.Rule{Name: "r", Limit: 200, Period: time.Second}, 2)
	if l.sharedBefore.Load() == 0 || l.inFall.Load() == 0 {
		t.Errorf("shared decisions before the outage: %d, fallback decisions: %d; want both > 0",
			l.sharedBefore.Load(), l.inFall.Load())
	}
	// A stall bound, not a speed claim: the margin absorbs scheduling noise of
	// a busy 2-core machine under -race; a stalled call would take seconds.
	if max := time.Duration(l.maxLatency.Load()); max > fbDeadline+250*time.Millisecond {
		t.Errorf("slowest decision took %v, want at most the deadline %v + 250ms", max, fbDeadline)
	}
	first, rec := l.firstShared.Load(), l.recoverAt.Load()
	if first == 0 || time.Duration(first-rec) > time.Second {
		t.Errorf("no shared decision within 1s of the store's return (first at %v after)", time.Duration(first-rec))
	}
	req := limiter.Request{Key: "after", Rule: limiter.Rule{Limit: 1e9, Period: time.Second}}
	for i := 0; i < 50 && l.f.FallbackActive(); i++ {
		_, _ = l.f.Decide(context.Background(), req)
		time.Sleep(20 * time.Millisecond)
	}
	if l.f.FallbackActive() {
		t.Error("FallbackActive() still true 1s after the store came back")
	}
	t.Logf("max latency %v, shared again %v after recovery, %d fallback decisions",
		time.Duration(l.maxLatency.Load()), time.Duration(first-rec), l.inFall.Load())
}

// warmUp fills the client's pool before the load starts (bounded): the
// outage should find a healthy store, not one still dialing on a busy machine.
func (l *fbLoad) warmUp(t *testing.T) {
	req := limiter.Request{Key: "warm-up", Rule: limiter.Rule{Limit: 1e9, Period: time.Second}}
	for range 50 {
		var fell atomic.Bool
		var wg sync.WaitGroup
		for range fbWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if d, err := l.f.Decide(context.Background(), req); err != nil || d.Fallback {
					fell.Store(true)
				}
			}()
		}
		wg.Wait()
		if !fell.Load() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the store does not answer 16 concurrent decisions before the outage")
}

func TestFallbackRedisKilledUnderLoad(t *testing.T) {
	r := testenv.StartRedis(t)
	l := &fbLoad{f: newFallback(t, fbStore(r.DeadlineClient(0)), fallback.Settings{
		Guard: fbBreaker(t, "redis"), Instances: 2}, nil)}
	l.run(t, r.Kill, r.Start)
}

// A Redis that accepts connections and never answers (SIGSTOP).
func TestFallbackRedisPausedUnderLoad(t *testing.T) {
	r := testenv.StartRedis(t)
	l := &fbLoad{f: newFallback(t, fbStore(r.DeadlineClient(0)), fallback.Settings{
		Guard: fbBreaker(t, "redis"), Instances: 2}, nil)}
	l.run(t, r.Pause, r.Resume)
}
