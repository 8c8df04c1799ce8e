package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBadSettings reports Settings out of range.
var ErrBadSettings = errors.New("redisstore: bad settings")

// ErrBusy is returned at once when Settings.MaxWaiting decisions already
// wait for a pipeline: Redis is not keeping up, and queueing more would only
// turn the backlog into timeouts.
var ErrBusy = errors.New("redisstore: too many decisions waiting for redis")

// Settings tune how concurrent decisions are coalesced. Zero values mean
// the defaults; they are applied in one place, Settings.withDefaults.
type Settings struct {
	// MaxBatch is the most decisions sent in one pipeline. 0 means 64.
	// 1 turns batching off: each decision is its own EVALSHA, as go-redis
	// Script.Run sends it.
	MaxBatch int
	// Pipelines is how many pipelines may be in flight at once. While they
	// all are, new decisions wait and leave together in the next one, so
	// batches grow with load and a lone decision leaves at once. 0 means 2
	// (on loopback, 2 made more decisions/s than 1 or 4, and a lower p99 than 4).
	Pipelines int
	// Linger is how long a pipeline that is not full waits for more
	// decisions before it leaves. 0 means no wait (the default): batching
	// comes from the pipelines in flight alone. At most 1 ms.
	Linger time.Duration
	// MaxWaiting bounds the decisions waiting for a pipeline; beyond it
	// Decide returns ErrBusy at once. 0 means 8192.
	MaxWaiting int
}

func (s Settings) withDefaults() (Settings, error) {
	if s.MaxBatch < 0 || s.Pipelines < 0 || s.MaxWaiting < 0 || s.Linger < 0 || s.Linger > time.Millisecond {
		return s, fmt.Errorf("%w: want MaxBatch, Pipelines, MaxWaiting ≥ 0 and 0 ≤ Linger ≤ 1ms, got %+v", ErrBadSettings, s)
	}
	if s.MaxBatch == 0 {
		s.MaxBatch = 64
	}
	if s.Pipelines == 0 {
		s.Pipelines = 2
	}
	if s.MaxWaiting == 0 {
		s.MaxWaiting = 8192
	}
	return s, nil
}

// job is one decision waiting for its pipeline. The flusher sets res and
// err, then closes done; the caller reads them only after done is closed,
// and may stop waiting earlier (its context ended), leaving the job to the
// flusher.
type job struct {
	ctx  context.Context
	keys []string
	args [7]any
	alg  int
	res  any
	err  error
	done chan struct{}
}

// enqueue adds j to the queue and starts a flusher when fewer than
// Pipelines run. Lock rule: r.mu guards queue and flushers, nothing else.
func (r *Store) enqueue(j *job) error {
	r.mu.Lock()
	if len(r.queue) >= r.set.MaxWaiting {
		r.mu.Unlock()
		return ErrBusy
	}
	r.queue = append(r.queue, j)
	start := r.flushers < r.set.Pipelines
	if start {
		r.flushers++
	}
	r.mu.Unlock()
	if start {
		go r.flush()
	}
	return nil
}

// flush sends batches until the queue is empty, then exits.
func (r *Store) flush() {
	for {
		if r.set.Linger > 0 {
			r.mu.Lock()
			short := len(r.queue) < r.set.MaxBatch
			r.mu.Unlock()
			if short {
				time.Sleep(r.set.Linger)
			}
		}
		r.mu.Lock()
		n := min(len(r.queue), r.set.MaxBatch)
		if n == 0 {
			r.flushers--
			r.mu.Unlock()
			return
		}
		batch := make([]*job, n)
		copy(batch, r.queue)
		k := copy(r.queue, r.queue[n:])
		clear(r.queue[k:])
		r.queue = r.queue[:k]
		r.mu.Unlock()
		r.send(batch)
	}
}

// send runs the live jobs of batch in one pipeline and completes every job.
func (r *Store) send(batch []*job) {
	live := batch[:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil { // its caller is gone already
			j.err = err
			close(j.done)
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	if r.multi {
		r.sendScripts(ctx, live)
	} else {
		r.sendPipelined(ctx, live)
	}
	for _, j := range live {
		close(j.done)
	}
}

// batchContext bounds a pipeline by the latest deadline of its jobs, or by
// nothing (the client's timeouts) when one of them has no deadline.
func batchContext(jobs []*job) (context.Context, context.CancelFunc) {
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

// wait returns j's reply, or ctx's error as soon as ctx ends.
func wait(ctx context.Context, j *job) (any, error) {
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
