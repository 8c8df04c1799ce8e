package instrument

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// RequestsMetric is the name of the request counter: one increment per
// request (or gateway check), with the answer its client got.
const RequestsMetric = "throttled_requests_total"

// Reasons of throttled_requests_total: why the client got its answer. The
// set is bounded: these, and for a request a dry run let pass (its client
// got the admitted answer) the refusal it would have had:
// dry_run_over_quota, dry_run_shed (a multiplier, the tier cap or the
// gate) and dry_run_delayed (enforce.DryRunPrefix).
const (
	// ReasonAdmitted: throttled let the request through and the handler
	// (the upstream) answered below 500; for a gateway, the check allowed it.
	ReasonAdmitted = "admitted"
	// ReasonFallback: as admitted, but decided without the shared store:
	// by the fallback, or let through on a store error (outage traffic).
	ReasonFallback = "fallback"
	// ReasonOverQuota: 429, the client's quota is spent.
	ReasonOverQuota = "over_quota"
	// ReasonShed: 503, a rule's admission bucket (base × multiplier) is spent.
	ReasonShed = "shed"
	// ReasonTierCap: 503, the tier-wide admission cap (rule tier_admission).
	ReasonTierCap = "tier_cap"
	// ReasonConcurrency: 503, the inner loop's gate shed it.
	ReasonConcurrency = "concurrency"
	// ReasonBulkhead: 503, a tier's or route's bulkhead is full.
	ReasonBulkhead = DecisionBulkhead
	// ReasonBreakerOpen: 503, the route's circuit breaker is open.
	ReasonBreakerOpen = DecisionBreakerOpen
	// ReasonUpstreamError: the handler (the upstream) answered 5xx, the
	// proxy's 502 (unreachable) and 504 (no headers in time) among them.
	ReasonUpstreamError = "upstream_error"
	// ReasonClientGone: 499, the client went away while it waited for a
	// bulkhead or the gate (or, at a gateway, before the check's answer).
	ReasonClientGone = "client_gone"
	// ReasonInvalid: a gateway's check that could not be asked: 400 (bad
	// input), 404 (unknown RLS domain), 405 (not a POST); and the proxy's
	// 413 to a declared body over its bound, refused before any rule.
	ReasonInvalid = "invalid"
	// ReasonStoreError: a gateway's check the store failed on with no
	// fallback deciding it: the RLS answers UNAVAILABLE (code 503) and the
	// gateway's failure mode decides; any other failure is code 500.
	ReasonStoreError = "store_error"
)

// RequestReasons are the reasons of throttled_requests_total, in the
// order the README's metrics table gives them.
var RequestReasons = [...]string{ReasonAdmitted, ReasonFallback, ReasonOverQuota, ReasonShed, ReasonTierCap,
	ReasonConcurrency, ReasonBulkhead, ReasonBreakerOpen, ReasonUpstreamError, ReasonClientGone,
	ReasonInvalid, ReasonStoreError}

// TierNone is the tier label of a request that has no tier (a gateway's
// check that failed before one was known, the proxy's 413 before any rule).
const TierNone = "none"

// Requests is throttled_requests_total{tier,code,reason}: every request
// or gateway check counted once, as its client saw the answer. code is the
// HTTP status as a number ("200", "429", "503", "502", …: HTTP's codes,
// 100–599, bounded); a gateway's is the status its client is to answer
// (an RLS OVER_LIMIT is 429, or 503 when shed). Safe for concurrent use;
// it does not allocate for a label set seen before.
type Requests struct {
	vec *prometheus.CounterVec
	// counters is the child counter of every label set counted so far: a
	// map never changed once stored, read without a lock; resolve stores
	// a new one, holding mu.
	counters atomic.Pointer[map[requestKey]prometheus.Counter]
	mu       sync.Mutex
}

type requestKey struct {
	tier   string
	code   int
	reason string
}

// NewRequests registers throttled_requests_total on reg (nil: none).
func NewRequests(reg prometheus.Registerer) (*Requests, error) {
	r := &Requests{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: RequestsMetric,
		Help: "Requests (and gateway checks), each counted once with the answer its client got: by tier, " +
			"HTTP status code and reason (admitted, fallback, over_quota, shed, tier_cap, concurrency, bulkhead, " +
			"breaker_open, upstream_error, client_gone, invalid, store_error; dry_run_* when a dry run let it pass).",
	}, []string{"tier", "code", "reason"})}
	r.counters.Store(&map[requestKey]prometheus.Counter{})
	if reg != nil {
		if err := reg.Register(r.vec); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Count counts one request of tier ("" is TierNone) answered with code
// for reason.
func (r *Requests) Count(tier string, code int, reason string) {
	if tier == "" {
		tier = TierNone
	}
	k := requestKey{tier, code, reason}
	c := (*r.counters.Load())[k]
	if c == nil {
		c = r.resolve(k)
	}
	c.Inc()
}

func (r *Requests) resolve(k requestKey) prometheus.Counter {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := *r.counters.Load()
	if c := cur[k]; c != nil {
		return c
	}
	next := maps.Clone(cur)
	next[k] = r.vec.WithLabelValues(k.tier, strconv.Itoa(k.code), k.reason)
	r.counters.Store(&next)
	return next[k]
}
