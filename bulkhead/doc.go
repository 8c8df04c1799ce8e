// Package bulkhead isolates load: concurrency bulkheads per tier or route,
// and circuit breakers (sony/gobreaker v2) around the store and upstreams.
//
// # Bulkheads
//
// A Bulkhead lets at most Limit calls hold a permit at once. A caller that
// finds it full waits in a short FIFO queue (Settings.MaxQueue places, at most
// Settings.MaxWait, honouring its context) or, without a queue, is refused at
// once. A refusal is ErrFull: answer 503 with reason "bulkhead" and a
// Retry-After of Bulkhead.RetryAfter, rounded up to whole seconds.
//
//	p, err := b.Acquire(ctx)
//	if errors.Is(err, bulkhead.ErrFull) { /* 503, Retry-After: b.RetryAfter() */ }
//	if err != nil { return err } // ctx ended
//	defer p.Release()
//
// Resize changes the limit at run time. Growing admits queued callers at
// once; shrinking takes nothing from current holders and admits no one until
// fewer than the new limit are held. A Permit releases at most once, however
// often Release is called, so permits never leak nor multiply. Taking and
// releasing a permit allocates nothing (see the benchmarks). Callers arriving
// while others queue join the queue; TryAcquire alone may overtake them.
//
// A Set holds bulkheads by name, created on first use.
//
// # Gates
//
// A Gate is the adaptive, priority-aware concurrency limit in front of an
// upstream (the inner loop of throttled's overload control). Each call
// states its priority: 0 is the most important, larger values are shed
// first.
//
//	p, err := gate.Acquire(ctx, priority)
//	if errors.Is(err, bulkhead.ErrShed) { /* 503, reason "shed" */ }
//	if err != nil { return err } // ctx ended
//	defer p.Release() // or p.Discard() when the call says nothing about latency
//
// Below the limit a call is admitted at once. At the limit it waits in a
// short queue ordered by priority, then arrival, for at most
// GateSettings.MaxWait (GateSettings.TopMaxWait for the most important
// callers); every freed permit goes to the head of the queue.
// When the queue is full, a newcomer more important than the last waiter
// (the least important, newest one) takes that waiter's place, and the
// waiter is shed; any other newcomer is shed. So a call is refused only
// when nothing less important is left to refuse, save that holders keep
// their permits and waits are bounded by MaxWait.
//
// Congestion: a caller that waited at least half of MaxWait, or was shed
// after its longest wait, marks its priority congested for its own longest
// wait (MaxWait, or TopMaxWait at priority 0), and meanwhile every less
// important newcomer is shed at once, even below the limit. When the important callers alone fill the upstream, a permit
// given to a less important one is one they miss.
//
// A controller moves the limit with SetLimit (never below
// GateSettings.MinLimit; growing admits waiters at once, shrinking takes
// nothing from holders), from what TakeWindow reports since its previous
// call: the number of latency samples (permit hold times, i.e. upstream
// round trips), their average and minimum, and the most permits held at
// once. Both use builtin types only, so a controller package can declare
// the interface it needs without importing this one. Taking and releasing
// a permit allocates nothing, queued or not (see the benchmarks).
//
// # Breakers
//
// A Breaker wraps calls to one dependency. Closed, it counts failures: errors,
// and calls still running at Deadline (each call runs under
// context.WithTimeout, default 50 ms, so a slow store cannot stall requests).
// ConsecutiveFailures in a row open it; open, every call gets ErrOpen at once
// (answer 503 or take the fallback path). After OpenTimeout it turns
// half-open and lets HalfOpenMaxRequests probes through: if they all succeed
// it closes, if one fails it opens again. BreakerSet holds breakers by name
// and gives a reverse proxy an http.RoundTripper with one breaker per route,
// tripping on 5xx and timeouts. Breaker.Serve is the same around an
// http.Handler (an in-process handler, or a whole reverse proxy): 5xx
// answers and answers whose headers miss Deadline are failures, and past
// Deadline the handler's context ends with a *DeadlineError as its cause.
//
// # Metrics
//
// NewMetrics(reg) registers, once per registry (a second call shares them):
//
//	throttled_breaker_state{name}            gauge: 0 closed, 1 half-open, 2 open
//	throttled_bulkhead_inflight{name}        gauge: permits held now (bulkheads and gates)
//	throttled_concurrency_limit{name}        gauge: the current limit (bulkheads and gates)
//	throttled_bulkhead_rejected_total{name}  counter: ErrFull and ErrShed refusals
//	throttled_bulkhead_shed_total{name,priority}
//	                                         counter: a gate's ErrShed refusals by priority,
//	                                         "0" to "7" ("7" counts 7 and above)
//
// Bulkheads and gates share one name space on a Metrics.
package bulkhead
