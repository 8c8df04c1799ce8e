package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/throttledhq/throttled/limiter"
)

// job is one decision on its way to Redis: its keys and script arguments,
// held so that go-redis writes them without an allocation (pointers in an
// interface cost none, boxed strings and numbers do), and its reply. Jobs
// are pooled.
//
// Lock rule: the caller fills a job, then only the flusher touches it until
// finish. finish and a caller that stops waiting race on state: whoever
// loses the CompareAndSwap from jobWaiting owns the job's return to the
// pool (see finish and await).
type job struct {
	ctx   context.Context
	alg   int
	key   keyArg // KEYS[1]: the bucket (the sliding log: Key)
	key2  keyArg // the sliding log's KEYS[2]: Key + ":a" (the others have one key)
	field string // ARGV[8]: the client key, the bucket's field
	now   string // ARGV[1]: "" (Redis TIME) or µs of the store's clock
	limit int64
	per   int64 // µs, -1: the calendar month (periodArg)
	capa  int64
	cost  int64
	m     string // the multiplier, formatted once per value (multArg)
	ref   string // "1": a refund
	set   int    // a batch's number of its rule arguments (ruleSets)
	rep   [4]int64
	err   error
	state atomic.Int32  // jobWaiting, jobDone, jobAbandoned
	done  chan struct{} // capacity 1: the flusher's one signal per use
}

const (
	jobWaiting int32 = iota
	jobDone
	jobAbandoned
)

// keyArg is a key built in place; go-redis writes it through MarshalBinary.
type keyArg []byte

// MarshalBinary returns the key's bytes (it never fails).
func (k *keyArg) MarshalBinary() ([]byte, error) { return *k, nil }

var jobPool = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

// newJob takes a pooled job and fills it for req (normalized).
func (r *Store) newJob(ctx context.Context, req *limiter.Request) *job {
	j := jobPool.Get().(*job)
	alg := req.Rule.Algorithm
	j.ctx, j.alg, j.now = ctx, int(alg), ""
	if alg == limiter.SlidingWindowLog { // the units admitted, in the same slot
		j.key = r.appendKey(j.key[:0], alg, req.Key)
		j.key2 = append(append(j.key2[:0], j.key...), ":a"...)
	} else {
		j.key = r.appendBucket(j.key[:0], alg, req.Key)
	}
	j.field = req.Key
	if r.now != nil {
		j.now = strconv.FormatInt(r.now().UnixMicro(), 10)
	}
	j.limit, j.per, j.capa = req.Rule.Limit, periodArg(&req.Rule), req.Rule.Capacity()
	j.cost, j.m, j.ref = req.Cost, r.multArg(req.Multiplier), refundArg[b2i(req.Refund)]
	return j
}

// multArg is m as go-redis would write a float64 ('f', shortest), without
// formatting it per decision: 1 is a constant, any other value is
// formatted when it differs from the last one (a controller changes it at
// most once per tick), which is the only allocation.
func (r *Store) multArg(m float64) string {
	if m == 1 {
		return "1"
	}
	if c := r.mult.Load(); c != nil && c.m == m {
		return c.s
	}
	c := &multCache{m: m, s: strconv.FormatFloat(m, 'f', -1, 64)}
	r.mult.Store(c)
	return c.s
}

// multCache is the last multiplier multArg formatted.
type multCache struct {
	m float64
	s string
}

// release returns j to the pool.
func (j *job) release() {
	j.ctx, j.err, j.rep, j.field = nil, nil, [4]int64{}, ""
	j.state.Store(jobWaiting)
	jobPool.Put(j)
}

// appendKeys appends j's keys (numKeys of its algorithm) to a.
func (j *job) appendKeys(a []any) []any {
	if numKeys[j.alg] == 1 {
		return append(a, &j.key)
	}
	return append(a, &j.key, &j.key2)
}

// appendArgs appends j's 8 script arguments to a.
func (j *job) appendArgs(a []any) []any {
	return append(a, &j.now, &j.limit, &j.per, &j.capa, &j.cost, &j.m, &j.ref, &j.field)
}

// appendRuleArgs appends j's first 7 script arguments, its rule's (the
// 8th is its client key), to a.
func (j *job) appendRuleArgs(a []any) []any {
	return append(a, &j.now, &j.limit, &j.per, &j.capa, &j.cost, &j.m, &j.ref)
}

// keyStrings are j's keys as strings, for go-redis Script and EvalSha.
func (j *job) keyStrings() []string {
	if numKeys[j.alg] == 1 {
		return []string{string(j.key)}
	}
	return []string{string(j.key), string(j.key2)}
}

// finish hands j's outcome to its caller, or returns j to the pool when
// the caller stopped waiting. The flusher must not touch j afterwards.
func (j *job) finish() {
	if j.state.CompareAndSwap(jobWaiting, jobDone) {
		j.done <- struct{}{}
		return
	}
	j.release()
}

// await returns j's reply, or ctx's error as soon as ctx ends, and gives j
// back to the pool unless the flusher still holds it.
func (j *job) await(ctx context.Context) ([4]int64, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobWaiting, jobAbandoned) {
			return [4]int64{}, ctx.Err() // finish releases j
		}
		<-j.done // finished meanwhile
	}
	rep, err := j.rep, j.err
	j.release()
	return rep, err
}

// replyInts reads a script reply {reason, remaining, reset_us, retry_us}.
func replyInts(res any) (n [4]int64, err error) {
	arr, ok := res.([]any)
	if !ok || len(arr) != 4 {
		return n, fmt.Errorf("%w: want an array of 4 integers, got %T %v", ErrBadReply, res, res)
	}
	for i, x := range arr {
		if n[i], ok = x.(int64); !ok {
			return n, fmt.Errorf("%w: element %d is %T, want integer", ErrBadReply, i, x)
		}
	}
	return n, nil
}

// decision checks a reply and makes the Decision of req from it. It is the
// one place that reads replies.
func decision(req *limiter.Request, n [4]int64) (limiter.Decision, error) {
	if n[0] < 0 || n[0] >= int64(limiter.NumReasons) || n[1] < 0 || n[2] < 0 || n[3] < 0 {
		return limiter.Decision{}, fmt.Errorf("%w: values out of range: %v", ErrBadReply, n)
	}
	return limiter.DecisionOf(req, limiter.Reason(n[0]), float64(n[1]), float64(n[2]), float64(n[3])), nil
}

// ruleSets are the distinct rule arguments of a batch's decisions (the
// first 7 arguments of the one-decision script: clock, limit, period,
// capacity, cost, multiplier, refund), each sent once; a decision names
// its set by number (job.set). A batch of one rule, cost and clock (the
// usual one: Redis TIME) has one set.
type ruleSets struct {
	n     int    // len(first), as a command argument
	first []*job // the first decision of each set, in order
}

// maxSearch bounds how many of the latest sets a decision is compared
// with: decisions of one set come together, and a batch whose every
// decision differs (a store clock) costs no more than a linear scan.
const maxSearch = 8

// index numbers the set of every job of jobs.
func (rs *ruleSets) index(jobs []*job) {
	rs.first = rs.first[:0]
	for _, j := range jobs {
		j.set = -1
		for i := len(rs.first) - 1; i >= max(0, len(rs.first)-maxSearch); i-- {
			if sameRule(rs.first[i], j) {
				j.set = i
				break
			}
		}
		if j.set < 0 {
			j.set = len(rs.first)
			rs.first = append(rs.first, j)
		}
	}
	rs.n = len(rs.first)
}

// reset drops the jobs held.
func (rs *ruleSets) reset() {
	clear(rs.first)
	rs.first, rs.n = rs.first[:0], 0
}

// sameRule reports whether a and b send the same rule arguments.
func sameRule(a, b *job) bool {
	return a.limit == b.limit && a.per == b.per && a.capa == b.capa && a.cost == b.cost &&
		a.now == b.now && a.m == b.m && a.ref == b.ref
}
