package redisstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
)

var batchRule = limiter.Rule{Name: "b", Limit: 100, Period: time.Hour, Burst: 100}

// queued is how many decisions wait for a pipeline.
func (r *Store) queued() int {
	l := &r.lanes.one
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// flushing is how many pipelines run or are about to.
func (r *Store) flushing() int {
	l := &r.lanes.one
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushers
}

// untilQueued waits until n decisions wait for a pipeline.
func untilQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for s.queued() != n {
		time.Sleep(time.Millisecond)
	}
}

// stalled returns a store with one pipeline on a paused Redis, whose only
// pipeline is stuck on one decision; resume lets everything through.
// prep, if any, runs on Redis before the pause.
func stalled(t *testing.T, set Settings, prep ...func(*Store, *redis.Client)) (s *Store, c *redis.Client, resume func()) {
	r := testenv.StartRedis(t)
	c = r.DeadlineClient(-1)
	set.Pipelines = 1
	s, err := NewWithSettings(c, set, limiter.WithPrefix("b:"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(context.Background(), limiter.Request{Key: "warm", Rule: batchRule}); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range prep {
		p(s, c)
	}
	r.Pause()
	var once sync.Once
	resume = func() { once.Do(r.Resume) }
	t.Cleanup(resume)
	go s.Decide(context.Background(), limiter.Request{Key: "stuck", Rule: batchRule}) //nolint:errcheck // only occupies the pipeline
	for s.flushing() != 1 || s.queued() != 0 {                                        // the stuck decision left
		time.Sleep(time.Millisecond)
	}
	return s, c, resume
}

// TestBatchCoalesces: decisions that arrive while the pipeline is busy
// leave together, as one batch script, and each gets its own answer.
func TestBatchCoalesces(t *testing.T) {
	s, c, resume := stalled(t, Settings{})
	const n = 40
	rem := make(chan int64, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: batchRule})
			if err != nil {
				t.Error(err)
			}
			rem <- d.Remaining
		}()
	}
	untilQueued(t, s, n)
	resume()
	wg.Wait()
	close(rem)
	seen := map[int64]bool{}
	for r := range rem {
		seen[r] = true
	}
	if len(seen) != n || !seen[99] || !seen[100-n] {
		t.Errorf("remaining values %v: want each of %d..99 once", seen, 100-n)
	}
	if got := testenv.EvalshaCalls(t, c); got != 2 { // the stuck one, then the batch
		t.Errorf("EVALSHA calls = %d, want 2", got)
	}
}

// TestBatchCallerDeadline: a caller whose context ends gets its error at
// once, while its pipeline is still stuck on a paused Redis.
func TestBatchCallerDeadline(t *testing.T) {
	s, _, resume := stalled(t, Settings{})
	defer resume()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: batchRule})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded while Redis is paused", err)
	}
}

// TestBatchBusy: beyond MaxWaiting decisions waiting, Decide refuses at once.
func TestBatchBusy(t *testing.T) {
	s, _, resume := stalled(t, Settings{MaxWaiting: 2})
	defer resume()
	for range 2 {
		go s.Decide(context.Background(), limiter.Request{Key: "k", Rule: batchRule}) //nolint:errcheck // fills the queue
	}
	untilQueued(t, s, 2)
	if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: batchRule}); !errors.Is(err, ErrBusy) {
		t.Fatalf("err = %v, want ErrBusy", err)
	}
}

// TestBatchErrorIsPerDecision: a key of the wrong type fails its own
// decision only, not the others of its batch ("good" is in another bucket).
func TestBatchErrorIsPerDecision(t *testing.T) {
	s, _, resume := stalled(t, Settings{}, func(s *Store, c *redis.Client) {
		if err := c.RPush(context.Background(), s.Bucket(limiter.TokenBucket, "bad"), "x").Err(); err != nil {
			t.Fatal(err)
		}
	})
	type out struct {
		key string
		err error
	}
	res := make(chan out, 2)
	for _, k := range []string{"bad", "good"} {
		go func() {
			_, err := s.Decide(context.Background(), limiter.Request{Key: k, Rule: batchRule})
			res <- out{k, err}
		}()
	}
	untilQueued(t, s, 2)
	resume()
	for range 2 {
		o := <-res
		if bad := o.key == "bad"; bad != (o.err != nil) || bad && !strings.Contains(o.err.Error(), "WRONGTYPE") {
			t.Errorf("%s: err = %v, want WRONGTYPE for bad only", o.key, o.err)
		}
	}
}

// TestBatchGathersReadyCallers: on one processor, decisions whose
// goroutines are ready to run when a flusher starts leave in its batch:
// the flusher yields (Settings.Gather) before it takes the queue. Without
// the yields the flusher ran first, sent the decision that started it
// alone, and the other seven waited for the next pipeline.
func TestBatchGathersReadyCallers(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client() // no deadlines: every decision queues, none is sent alone
	s, err := NewWithSettings(c, Settings{Pipelines: 1}, limiter.WithPrefix("g:"))
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for round := range 5 {
		before := testenv.EvalshaCalls(t, c)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if _, err := s.Decide(context.Background(), limiter.Request{Key: fmt.Sprint(round, i), Rule: batchRule}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := testenv.EvalshaCalls(t, c) - before; n != 1 {
			t.Errorf("round %d: 8 ready decisions took %d EVALSHA, want 1 batch", round, n)
		}
	}
}

func TestNewWithSettingsBad(t *testing.T) {
	for _, set := range []Settings{{MaxBatch: -1}, {Pipelines: -1}, {MaxWaiting: -1}, {Linger: 2 * time.Millisecond}} {
		if _, err := NewWithSettings(redis.NewClient(&redis.Options{}), set); !errors.Is(err, ErrBadSettings) {
			t.Errorf("%+v: err = %v, want ErrBadSettings", set, err)
		}
	}
}

// TestBatchUnderFallback: the Fallback's 50 ms deadline still bounds a
// batched decision: on a paused Redis it decides locally, while Redis is
// still paused.
func TestBatchUnderFallback(t *testing.T) {
	s, _, resume := stalled(t, Settings{})
	defer resume()
	f, err := fallback.New(s, fallback.Settings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Decide(context.Background(), limiter.Request{Key: "k", Rule: batchRule})
	if err != nil || !d.Allowed || !d.Fallback {
		t.Fatalf("decision %+v, %v: want a local (fallback) admission", d, err)
	}
}

// TestBatchClusterNoScript: on a cluster (one EVALSHA per decision in
// pipelines per node) a SCRIPT FLUSH on every master costs nothing.
func TestBatchClusterNoScript(t *testing.T) {
	c := testenv.StartCluster(t).Client(t)
	s := New(c, limiter.WithPrefix("ns:"))
	ctx := context.Background()
	for i, want := range []int64{99, 98} {
		if i == 1 {
			if err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				return m.ScriptFlush(ctx).Err()
			}); err != nil {
				t.Fatal(err)
			}
		}
		d, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: batchRule})
		if err != nil || d.Remaining != want {
			t.Fatalf("decision %d: %+v, %v: want remaining %d", i, d, err, want)
		}
	}
}

// TestBatchPooledJobsUnderDeadlines: with callers giving up at random
// (deadlines of 0 to 2 ms), a pooled job is never reused while its batch
// still writes to it: every answer a caller gets is its own key's (each
// goroutine's bucket holds a range of Remaining no other can reach). On a
// client that honours deadlines lone decisions are also sent by their
// callers (sendAlone).
func TestBatchPooledJobsUnderDeadlines(t *testing.T) {
	r := testenv.StartRedis(t)
	for name, c := range map[string]*redis.Client{"queued": r.Client(), "alone": r.DeadlineClient(0)} {
		t.Run(name, func(t *testing.T) { pooledJobsUnderDeadlines(t, New(c, limiter.WithPrefix("pool:"+name+":"))) })
	}
}

func pooledJobsUnderDeadlines(t *testing.T, s *Store) {
	var wg sync.WaitGroup
	var answered, gaveUp atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			burst := int64(10_000 * (g + 1))
			rule := limiter.Rule{Name: "p", Limit: burst, Period: time.Hour, Burst: burst}
			for i := range 200 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%3)*time.Millisecond)
				d, err := s.Decide(ctx, limiter.Request{Key: "g" + strconv.Itoa(g), Rule: rule})
				cancel()
				switch {
				case err != nil && !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("goroutine %d: %v", g, err)
				case err != nil:
					gaveUp.Add(1)
				case d.Remaining <= burst-10_000 || d.Remaining >= burst:
					t.Errorf("goroutine %d (burst %d): remaining %d is another key's", g, burst, d.Remaining)
				default:
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d answered, %d gave up", answered.Load(), gaveUp.Load())
}

// TestMultArg: the multiplier is written as go-redis writes a float64
// ('f', shortest), and a repeated value is not formatted again.
func TestMultArg(t *testing.T) {
	s := New(redis.NewClient(&redis.Options{}))
	for _, m := range []float64{1, 0.9, 0.25, 1e-7, 0.1 + 0.2, 0.9} {
		if got, want := s.multArg(m), strconv.FormatFloat(m, 'f', -1, 64); got != want {
			t.Errorf("multArg(%v) = %q, want %q", m, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { s.multArg(0.9) }); n != 0 {
		t.Errorf("multArg of the last value: %v allocs, want 0", n)
	}
}

// TestAloneCallerDeadline: a lone decision, sent from its caller's
// goroutine because a pipeline is free, still ends with its context's
// error at its deadline while Redis is paused.
func TestAloneCallerDeadline(t *testing.T) {
	r := testenv.StartRedis(t)
	s, err := NewWithSettings(r.DeadlineClient(-1), Settings{Pipelines: 1}, limiter.WithPrefix("b:"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(context.Background(), limiter.Request{Key: "warm", Rule: batchRule}); err != nil {
		t.Fatal(err)
	}
	r.Pause()
	defer r.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Decide(ctx, limiter.Request{Key: "k", Rule: batchRule})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded while Redis is paused", err)
	}
	if n := s.flushing(); n != 0 {
		t.Errorf("%d pipelines still held after the lone decision ended, want 0", n)
	}
}
