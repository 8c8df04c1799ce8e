package redisstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// ErrBadSettings reports Settings out of range.
var ErrBadSettings = errors.New("redisstore: bad settings")

// ErrBusy is returned at once when Settings.MaxWaiting decisions already
// wait for a pipeline: Redis is not keeping up, and queueing more would only
// turn the backlog into timeouts.
var ErrBusy = errors.New("redisstore: too many decisions waiting for redis")

// DefaultLinger is Settings.Linger's default: under load it about doubles
// the decisions per batch script (BENCHMARKS.md, issue 27).
const DefaultLinger = 500 * time.Microsecond

// Settings tune how concurrent decisions are coalesced. Zero values mean
// the defaults; they are applied in one place, Settings.withDefaults.
type Settings struct {
	// MaxBatch is the most decisions sent in one pipeline. 0 means 64.
	// 1 turns batching off: each decision is its own EVALSHA, as go-redis
	// Script.Run sends it.
	MaxBatch int
	// Pipelines is how many pipelines may be in flight at once (on a
	// cluster, to each master: lane.go). While they all are, new decisions
	// wait and leave together in the next one, so batches grow with load
	// and a lone decision leaves at once. 0 means 1: Redis spends about as
	// much CPU on each script call (reading, parsing, the Lua call,
	// replying: 35–60 µs on a loaded host) as on 8–10 decisions in it,
	// so one fuller batch costs it less than two halves, and the service
	// makes fewer system calls (BENCHMARKS.md, issue 27).
	Pipelines int
	// Linger is how long a pipeline that is not full waits for more
	// decisions before it leaves, once decisions already wait (a lone
	// decision on a free pipeline leaves at once). 0 means
	// DefaultLinger; a negative value means no wait. At most 1 ms.
	Linger time.Duration
	// Gather is how many times a flusher lets the goroutines that are ready
	// to run go first (runtime.Gosched) before it takes a batch, so that
	// decisions about to be asked for (requests already read, on their way
	// to Decide) join this batch instead of waiting for the next pipeline:
	// under load, batches grow and each decision costs fewer system calls;
	// when nothing else is ready to run a yield returns at once. 0 means 4;
	// a negative value turns it off.
	Gather int
	// MaxWaiting bounds the decisions waiting for a pipeline (on a cluster,
	// for each master's); beyond it Decide returns ErrBusy at once. 0 means
	// 8192.
	MaxWaiting int
	// CallTimeout, when set, bounds each pipeline on its own, apart from
	// its callers' deadlines: a caller still stops waiting when its context
	// ends, but its batch runs on, up to CallTimeout, so that it finishes
	// and keeps its connection (go-redis closes a connection whose read a
	// deadline cuts). A caller with a shorter deadline (the fallback's)
	// then needs no goroutine of its own to run the call past it, as
	// fallback.Settings.CallTimeout starts one per decision. A lone
	// decision is then queued too, never sent from its caller's goroutine.
	// Zero means a pipeline ends at the latest of its callers' deadlines.
	// Batches only (MaxBatch > 1): an unbatched call ends at its caller's.
	CallTimeout time.Duration
}

func (s Settings) withDefaults() (Settings, error) {
	if s.MaxBatch < 0 || s.Pipelines < 0 || s.MaxWaiting < 0 || s.CallTimeout < 0 || s.Linger > time.Millisecond {
		return s, fmt.Errorf("%w: want MaxBatch, Pipelines, MaxWaiting, CallTimeout ≥ 0 and Linger ≤ 1ms, got %+v",
			ErrBadSettings, s)
	}
	if s.MaxBatch == 0 {
		s.MaxBatch = 64
	}
	if s.Pipelines == 0 {
		s.Pipelines = 1
	}
	if s.Linger == 0 {
		s.Linger = DefaultLinger
	}
	if s.MaxWaiting == 0 {
		s.MaxWaiting = 8192
	}
	if s.Gather == 0 {
		s.Gather = 4
	}
	return s, nil
}

// enqueue adds j to l's queue and starts a flusher when fewer than
// Pipelines run, or, when the queue is empty and a pipeline is free, takes
// that pipeline for j alone (alone): the caller then sends j itself
// (sendAlone), with no goroutine started and none woken. Only on a client
// that honours deadlines: the caller waits for its reply, bounded by its
// deadline, where a queued caller stops waiting when its context ends.
func (r *Store) enqueue(l *lane, j *job) (alone bool, err error) {
	l.mu.Lock()
	if len(l.queue) >= r.set.MaxWaiting {
		l.mu.Unlock()
		return false, ErrBusy
	}
	free := l.flushers < r.set.Pipelines
	if free {
		l.flushers++
	}
	if free && len(l.queue) == 0 && r.alone {
		l.mu.Unlock()
		return true, nil
	}
	l.queue = append(l.queue, j)
	if l.want > 0 && len(l.queue) >= l.want {
		l.want = 0
		l.wake()
	}
	l.mu.Unlock()
	if free {
		go r.flush(l)
	}
	return false, nil
}

// sendAlone sends j, which holds a pipeline of l of its own (enqueue), from
// the caller's goroutine, bounded by the caller's ctx as an unbatched call
// is. Decisions queued meanwhile get a flusher, which inherits the pipeline.
func (r *Store) sendAlone(ctx context.Context, l *lane, j *job) {
	if j.err = ctx.Err(); j.err == nil {
		sc := scratchPool.Get().(*scratch)
		sc.batch = append(sc.batch[:0], j)
		r.exec(ctx, sc.batch, sc)
		clear(sc.batch)
		scratchPool.Put(sc)
	}
	l.mu.Lock()
	more := len(l.queue) > 0
	if !more {
		l.flushers--
	}
	l.mu.Unlock()
	if more {
		go r.flush(l)
	}
}

// flush sends batches of l until its queue is empty, then exits.
func (r *Store) flush(l *lane) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	for {
		for range r.set.Gather { // none when negative
			runtime.Gosched()
		}
		r.linger(l)
		l.mu.Lock()
		n := min(len(l.queue), r.set.MaxBatch)
		if n == 0 {
			l.flushers--
			l.mu.Unlock()
			return
		}
		l.last = n
		sc.batch = append(sc.batch[:0], l.queue[:n]...)
		k := copy(l.queue, l.queue[n:])
		clear(l.queue[k:])
		l.queue = l.queue[:k]
		l.mu.Unlock()
		r.send(sc)
	}
}

// linger waits, at most Linger, until l's queue holds as many decisions
// as its last batch (or MaxBatch): under steady load the callers of a batch
// come back at about the same time, and the next batch leaves with all of
// them instead of with the first few. One flusher of a lane lingers at a
// time; enqueue wakes it (lane.wake) when the queue is long enough.
func (r *Store) linger(l *lane) {
	if r.set.Linger <= 0 {
		return
	}
	l.mu.Lock()
	want := min(l.last, r.set.MaxBatch)
	if l.want > 0 || len(l.queue) == 0 || len(l.queue) >= want {
		l.mu.Unlock()
		return
	}
	l.want = want
	l.mu.Unlock()
	t := time.NewTimer(r.set.Linger)
	select {
	case <-l.ready():
	case <-t.C:
	}
	t.Stop()
	l.mu.Lock()
	l.want = 0
	select { // a wake that came after the timer
	case <-l.ready():
	default:
	}
	l.mu.Unlock()
}

// send runs the live jobs of sc.batch in one pipeline and finishes every
// job.
func (r *Store) send(sc *scratch) {
	live := sc.batch[:0]
	for _, j := range sc.batch {
		if err := j.ctx.Err(); err != nil { // its caller is gone already
			j.err = err
			j.finish()
			continue
		}
		live = append(live, j)
	}
	if len(live) > 0 {
		ctx, cancel := r.batchContext(live)
		r.exec(ctx, live, sc)
		cancel()
		for _, j := range live {
			j.finish()
		}
	}
	clear(sc.batch) // finished jobs belong to their callers or the pool
}

// exec runs jobs in one pipeline and fills in their replies and errors.
// A job that failed once its own context ended gets the context's error
// (the pipeline's deadline is the latest of its jobs', and a client that
// honours it fails the batch with its own timeout error).
func (r *Store) exec(ctx context.Context, jobs []*job, sc *scratch) {
	if r.multi {
		r.sendScripts(ctx, jobs, sc)
	} else {
		r.sendPipelined(ctx, jobs)
	}
	for _, j := range jobs {
		if j.err != nil {
			if err := ended(j.ctx); err != nil {
				j.err = err
			}
		}
	}
}

// ended is ctx's error, or context.DeadlineExceeded once its deadline
// has passed: a read that timed out at the deadline may return before the
// context's own timer fires.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// batchContext bounds a pipeline by CallTimeout when set, else by the
// latest deadline of its jobs, or by nothing (the client's timeouts) when
// one of them has no deadline.
func (r *Store) batchContext(jobs []*job) (context.Context, context.CancelFunc) {
	if r.set.CallTimeout > 0 {
		return context.WithTimeout(context.Background(), r.set.CallTimeout)
	}
	var last time.Time
	for _, j := range jobs {
		d, ok := j.ctx.Deadline()
		if !ok {
			return context.Background(), func() {}
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(context.Background(), last)
}
