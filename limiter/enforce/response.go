package enforce

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Header names.
const (
	HeaderLimit      = "X-RateLimit-Limit"
	HeaderRemaining  = "X-RateLimit-Remaining"
	HeaderReset      = "X-RateLimit-Reset" // UTC epoch seconds, as GitHub sends it
	HeaderPolicy     = "RateLimit-Policy"  // IETF draft: "<rule>";q=<limit>;w=<window s>
	HeaderRateLimit  = "RateLimit"         // IETF draft: "<rule>";r=<remaining>;t=<reset s>
	HeaderRetryAfter = "Retry-After"
)

// Canonical forms, so WriteHeaders can set the map without allocating.
var (
	keyLimit      = http.CanonicalHeaderKey(HeaderLimit)
	keyRemaining  = http.CanonicalHeaderKey(HeaderRemaining)
	keyReset      = http.CanonicalHeaderKey(HeaderReset)
	keyPolicy     = http.CanonicalHeaderKey(HeaderPolicy)
	keyRateLimit  = http.CanonicalHeaderKey(HeaderRateLimit)
	keyRetryAfter = http.CanonicalHeaderKey(HeaderRetryAfter)
)

// headerKeys are the names WriteHeaders sets, in the order of scratch.vals.
var headerKeys = [6]string{keyLimit, keyRemaining, keyReset, keyPolicy, keyRateLimit, keyRetryAfter}

// WriteHeaders sets the rate-limit headers of res on h, for the most
// restrictive rule that does not hide them (none when the reported rule
// hides them), those of that rule's HeaderSet, and Retry-After on a
// refusal. The values of a rule's limit
// that do not change (X-RateLimit-Limit, RateLimit-Policy) are made when
// the policy is; the others are made in the memory Check set aside for the
// request's bucket keys, so that a check and its headers cost one
// allocation. A second call on res (or a copy) makes its own.
func (res *Result) WriteHeaders(h http.Header) {
	if !res.Limited || res.Hidden && res.Allowed { // nothing to write
		return
	}
	s := res.sc
	if s == nil || !s.claimed.CompareAndSwap(false, true) {
		s = newScratch()
	}
	res.writeHeaders(h, s)
}

// writeHeaders is WriteHeaders making the values in s, which it owns.
func (res *Result) writeHeaders(h http.Header, s *scratch) {
	if !res.Hidden { // a hidden rule writes only a refusal's Retry-After
		set := res.headerSet()
		d := &res.Decision
		reset, window := ceilSeconds(d.ResetAfter), max(1, ceilSeconds(res.Period))
		text := res.cr.headerText(res.Rule, d.Limit, window)
		if set != HeadersIETF {
			res.writeLegacy(h, s, text, reset)
		}
		if set != HeadersLegacy {
			res.writeIETF(h, s, text, reset, window)
		}
	}
	if !res.Allowed {
		s.vals[5] = s.int(res.RetryAfter)
		h[keyRetryAfter] = s.vals[5:6:6]
	}
}

// writeLegacy sets X-RateLimit-Limit, -Remaining and -Reset; text is the
// limit's made header text, or nil (not a limit of the policy's: a store's
// own limit, a tier cap).
func (res *Result) writeLegacy(h http.Header, s *scratch, text *headerText, reset int64) {
	a, v, d := &s.arena, &s.vals, &res.Decision
	if text != nil {
		v[0] = text.limit
	} else {
		v[0] = a.int(d.Limit)
	}
	v[1] = a.int(d.Remaining)
	v[2] = a.int(res.at.Unix() + reset)
	for i := range 3 {
		h[headerKeys[i]] = v[i : i+1 : i+1]
	}
}

// writeIETF sets RateLimit-Policy and RateLimit, as writeLegacy does the
// legacy headers.
func (res *Result) writeIETF(h http.Header, s *scratch, text *headerText, reset, window int64) {
	a, v, d := &s.arena, &s.vals, &res.Decision
	if text != nil {
		v[3] = text.policy
	} else {
		start := a.len()
		a.buf = appendPolicy(a.buf, res.Rule, d.Limit, window)
		v[3] = a.from(start)
	}
	start := a.len()
	a.buf = append(a.buf, '"')
	a.buf = append(a.buf, res.Rule...)
	a.buf = append(a.buf, `";r=`...)
	a.buf = strconv.AppendInt(a.buf, d.Remaining, 10)
	a.buf = append(a.buf, ";t="...)
	a.buf = strconv.AppendInt(a.buf, reset, 10)
	v[4] = a.from(start)
	h[keyPolicy], h[keyRateLimit] = v[3:4:4], v[4:5:5]
}

// headerSet is the header set of the reported rule: both when none is.
func (res *Result) headerSet() HeaderSet {
	if res.cr == nil {
		return HeadersBoth
	}
	return res.cr.Headers
}

// scratchRoom is what a request's scratch holds in place for the bucket
// keys and header values: enough for a rule or two with keys of a few
// dozen bytes; beyond it the arena grows on the heap.
const scratchRoom = 128

// scratch is the memory one request's made strings need, in one
// allocation: the bucket keys and header values in an arena over room, the
// header value slices in vals. Check makes it, with the first key it
// builds; the first WriteHeaders of its Result (or a copy) claims it, so
// that no two writers share vals or write the arena at once.
type scratch struct {
	vals    [6]string // X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy, RateLimit, Retry-After
	claimed atomic.Bool
	arena
	room [scratchRoom]byte
}

func newScratch() *scratch {
	s := new(scratch)
	s.buf = s.room[:0]
	return s
}

// scratches are the scratches of requests on a store that copies its keys
// (Enforcer.pooled): nothing refers to one once its check is done.
var scratches = sync.Pool{New: func() any { return newScratch() }}

// reuse empties s, whose strings are no one's any more, into scratches.
func (s *scratch) reuse() {
	s.buf, s.vals = s.room[:0], [6]string{}
	if s.claimed.Load() { // a plain read; the store is a locked exchange (XCHG on amd64)
		s.claimed.Store(false)
	}
	scratches.Put(s)
}

// arena is an append-only byte buffer that hands out strings over the
// bytes it holds, as strings.Builder does: a byte once written is never
// written again (growing copies to a new array and leaves the old one to
// the strings over it), so those strings never change.
type arena struct{ buf []byte }

func (a *arena) len() int { return len(a.buf) }

// from is the string of the bytes written since start.
func (a *arena) from(start int) string {
	if start == len(a.buf) {
		return ""
	}
	return unsafe.String(&a.buf[start], len(a.buf)-start)
}

// int writes v in decimal and returns it.
func (a *arena) int(v int64) string {
	start := len(a.buf)
	a.buf = strconv.AppendInt(a.buf, v, 10)
	return a.from(start)
}

// headerText is what a limit's rate-limit headers say that does not change
// from one request to the next.
type headerText struct {
	limitN, window int64  // the limit and window (s) they are for
	limit          string // X-RateLimit-Limit
	policy         string // RateLimit-Policy
}

// newHeaderText is the header text of rule for a limit of limit per window
// seconds.
func newHeaderText(rule string, limit, window int64) headerText {
	return headerText{limitN: limit, window: window, limit: strconv.FormatInt(limit, 10),
		policy: string(appendPolicy(nil, rule, limit, window))}
}

// appendPolicy appends the RateLimit-Policy value: "<rule>";q=<limit>;w=<window>.
func appendPolicy(b []byte, rule string, limit, window int64) []byte {
	b = append(b, '"')
	b = append(b, rule...)
	b = append(b, `";q=`...)
	b = strconv.AppendInt(b, limit, 10)
	b = append(b, ";w="...)
	return strconv.AppendInt(b, window, 10)
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Refusal is the JSON body of a 429 or 503.
type Refusal struct {
	Error             string `json:"error"`
	Reason            string `json:"reason"`
	RetryAfterSeconds int64  `json:"retry_after_seconds"`
	Tier              string `json:"tier"`
	Rule              string `json:"rule"`
}

// Body is the JSON body for a refused request.
func (res *Result) Body() []byte {
	b, _ := json.Marshal(Refusal{Error: refusalMessage(res.Status), Reason: res.Decision.Reason.String(),
		RetryAfterSeconds: res.RetryAfter, Tier: res.Tier, Rule: res.Rule})
	return append(b, '\n')
}

// refusalMessage is the error message of a refusal with status.
func refusalMessage(status int) string {
	if status == http.StatusServiceUnavailable {
		return "service overloaded, retry later"
	}
	return "too many requests"
}

// trace adds the decision to the request's span. Without a configured
// tracer provider the span is a no-op that does not record, and this costs
// one context lookup.
func trace(ctx context.Context, res *Result) {
	span := oteltrace.SpanFromContext(ctx)
	if !res.Limited || !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String("throttled.tier", res.Tier),
		attribute.String("throttled.rule", res.Rule),
		attribute.String("throttled.decision", res.Decision.Label()),
		attribute.Int64("throttled.remaining", res.Decision.Remaining),
		attribute.Bool("throttled.shadowed", res.Shadowed),
	)
	if res.DryRun != "" {
		span.SetAttributes(attribute.String("throttled.dry_run", res.DryRun))
	}
}
