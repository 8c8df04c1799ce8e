package bench

import (
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
)

// modeWait is a control of `throttled bench http`, not a limiter: the hello
// world behind a handler that waits for another goroutine to answer, as a
// middleware waits for its store's reply, but with no call to make. Under
// net/http a handler that waits costs something by itself: while it waits,
// the connection's background read runs, finds nothing, parks in the
// poller, and must be woken when the response is written; the handler is
// parked and woken too. So this mode's ratio is the most an exact decision
// in a remote store (mode redis) could read on the same machine, whatever
// the store costs.
const modeWait = "wait"

// waiter is modeWait's handler. Requests queue; one goroutine at a time
// answers them, as the Redis store's flusher does: it lets the goroutines
// ready to run go first (one yield, where a flusher sends its batch and
// waits for the reply), takes every request queued, answers them all, and
// exits when none is left.
//
// Lock rule: mu guards queue and running.
type waiter struct {
	mu       sync.Mutex
	queue    []chan struct{}
	running  bool
	chans    sync.Pool    // of chan struct{} (capacity 1): no allocation per request
	answered atomic.Int64 // requests answered, for the tests
	next     http.Handler // helloWorld
}

func newWaiter(next http.Handler) *waiter {
	return &waiter{next: next, chans: sync.Pool{New: func() any { return make(chan struct{}, 1) }}}
}

func (w *waiter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	c := w.chans.Get().(chan struct{})
	w.mu.Lock()
	w.queue = append(w.queue, c)
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.answer()
	}
	<-c
	w.chans.Put(c)
	w.next.ServeHTTP(rw, r)
}

// answer answers the queued requests until none is left.
func (w *waiter) answer() {
	var batch []chan struct{}
	for {
		runtime.Gosched()
		w.mu.Lock()
		batch = append(batch[:0], w.queue...)
		clear(w.queue)
		w.queue = w.queue[:0]
		if len(batch) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, c := range batch {
			c <- struct{}{}
		}
		w.answered.Add(int64(len(batch)))
	}
}
