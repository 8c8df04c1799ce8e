package rls

import (
	"context"
	"runtime"
	"sync"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// workers run decisions on long-lived goroutines whose stacks stay grown.
//
// A decision's frames (gRPC's handler, the enforcer, the store wrappers, the
// Redis store waiting for its batch) take about 9 KB of stack, and gRPC
// runs each call on a new goroutine whose stack starts at 8 KB: every call
// copied its stack to a 16 KB one (runtime.newstack, ~11 % of the
// service's CPU under load). gRPC's own stream workers do not help: the GC
// shrinks an idle goroutine's stack when it uses less than a quarter of it,
// so at a few GC cycles a second most calls found a worker's stack shrunk
// again. A worker here idles below a pad of stackPad bytes, so that its
// grown stack is always used beyond a quarter and never shrunk.
//
// A call hands its decision to an idle worker and waits for it; when none
// is idle and fewer than max run, it starts one; else it decides on its own
// goroutine.
type workers struct {
	s     *Server
	jobs  chan *job // unbuffered: a send succeeds only into an idle worker
	slots chan struct{}
	quit  chan struct{}
	once  sync.Once
}

// stackPad is the stack a worker keeps below its idle loop: a quarter of
// the 32 KB stack the deepest decisions (a batch flushed on the caller's
// goroutine through the Redis client) grow it to.
const stackPad = 8 << 10

// job is one call handed to a worker, pooled with its done channel.
type job struct {
	ctx  context.Context
	req  *rlsv3.RateLimitRequest
	ans  answered
	resp *rlsv3.RateLimitResponse
	err  error
	done chan struct{}
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

func newWorkers(s *Server, n int) *workers {
	return &workers{s: s, jobs: make(chan *job), slots: make(chan struct{}, n), quit: make(chan struct{})}
}

// decide is s.decide run on a worker (or, when every worker is busy and no
// more may start, on the caller's goroutine).
func (w *workers) decide(ctx context.Context, req *rlsv3.RateLimitRequest, ans *answered) (*rlsv3.RateLimitResponse, error) {
	j := jobs.Get().(*job)
	j.ctx, j.req = ctx, req
	select {
	case w.jobs <- j:
	default:
		select {
		case w.slots <- struct{}{}:
			go w.work(j)
		default:
			j.resp, j.err = w.s.decide(ctx, req, &j.ans)
			j.done <- struct{}{}
		}
	}
	<-j.done
	resp, err := j.resp, j.err
	*ans = j.ans
	*j = job{done: j.done}
	jobs.Put(j)
	return resp, err
}

// work runs first and then the jobs handed to it until stop, on a stack
// kept grown by its pad.
func (w *workers) work(first *job) {
	var pad [stackPad]byte
	w.loop(first)
	runtime.KeepAlive(&pad)
}

func (w *workers) loop(j *job) {
	for {
		j.resp, j.err = w.s.decide(j.ctx, j.req, &j.ans)
		j.done <- struct{}{}
		select {
		case j = <-w.jobs:
		case <-w.quit:
			<-w.slots
			return
		}
	}
}

// stop ends the idle workers and those that finish their job.
func (w *workers) stop() { w.once.Do(func() { close(w.quit) }) }
