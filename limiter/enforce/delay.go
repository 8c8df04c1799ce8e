package enforce

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// defaultMaxWaiting is Settings.MaxWaiting's default.
const defaultMaxWaiting = 1024

// delayQueue orders the requests that wait in ModeDelay: they queue per
// bucket key and take turns, and only the head of a key's line sleeps and
// asks the store again. So N waiters on one key cost O(N) store calls,
// not O(N²), and never wake together. At most max requests wait at once,
// over all keys.
type delayQueue struct {
	mu      sync.Mutex // guards lines and waiting
	lines   map[string]*delayLine
	waiting int
	max     int
}

// delayLine is one key's line. Holding its turn (a token in the channel)
// is being the head.
type delayLine struct {
	turn chan struct{} // capacity 1
	n    int           // requests in the line, the head included; guarded by delayQueue.mu
}

func newDelayQueue(max int) *delayQueue {
	return &delayQueue{lines: map[string]*delayLine{}, max: max}
}

// join enters key's line, or reports false when max requests wait already.
func (q *delayQueue) join(key string) (*delayLine, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiting >= q.max {
		return nil, false
	}
	q.waiting++
	l := q.lines[key]
	if l == nil {
		l = &delayLine{turn: make(chan struct{}, 1)}
		q.lines[strings.Clone(key)] = l // the line may outlive the request whose (pooled) key made it
	}
	l.n++
	return l, true
}

func (q *delayQueue) leave(key string, l *delayLine) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting--
	if l.n--; l.n == 0 {
		delete(q.lines, key)
	}
}

// delay waits in req's line for capacity after the refusal d, while the
// wait fits before MaxWait is up and ctx lives. The store is asked again
// only by the head of the line: once when its turn comes after others
// (they spent what d promised), then after each wait it is told.
func (e *Enforcer) delay(ctx context.Context, cr *compiledRule, req limiter.Request, d limiter.Decision) (limiter.Decision, error) {
	deadline := e.set.Now().Add(cr.MaxWait)
	if e.set.Now().Add(max(d.RetryAfter, time.Millisecond)).After(deadline) {
		return d, nil
	}
	l, ok := e.delays.join(req.Key)
	if !ok {
		return d, nil
	}
	defer e.delays.leave(req.Key, l)
	waited, ok := takeTurn(ctx, l, deadline.Sub(e.set.Now()))
	if !ok {
		return d, nil
	}
	defer func() { <-l.turn }()
	var err error
	if waited {
		if d, err = e.store.Decide(ctx, req); err != nil || d.Allowed {
			return d, err
		}
	}
	for {
		wait := max(d.RetryAfter, time.Millisecond)
		if e.set.Now().Add(wait).After(deadline) || e.set.Sleep(ctx, wait) != nil {
			return d, nil
		}
		if d, err = e.store.Decide(ctx, req); err != nil || d.Allowed {
			return d, err
		}
	}
}

// takeTurn makes the caller the head of l, waiting at most for d. It
// reports whether the caller had to wait, and whether it got the turn.
func takeTurn(ctx context.Context, l *delayLine, d time.Duration) (waited, ok bool) {
	select {
	case l.turn <- struct{}{}:
		return false, true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case l.turn <- struct{}{}:
		return true, true
	case <-ctx.Done():
	case <-t.C:
	}
	return true, false
}
