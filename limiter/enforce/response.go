package enforce

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

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

// WriteHeaders sets the rate-limit headers of res on h, for the most
// restrictive rule that does not hide them (none when the reported rule
// hides them), and Retry-After on a refusal. The values of a rule's limit
// that do not change (X-RateLimit-Limit, RateLimit-Policy) are made when
// the policy is; the others share one string, and all one slice.
func (res *Result) WriteHeaders(h http.Header) {
	var b strings.Builder
	res.writeHeaders(h, &b)
}

// writeHeaders is WriteHeaders writing the values it makes to b, which
// may hold what the caller wrote before (strings taken from b stay valid).
func (res *Result) writeHeaders(h http.Header, b *strings.Builder) {
	if !res.Limited {
		return
	}
	if res.Hidden { // the rule hides its headers: only a refusal's Retry-After
		if !res.Allowed {
			h[keyRetryAfter] = []string{strconv.FormatInt(res.RetryAfter, 10)}
		}
		return
	}
	d := &res.Decision
	reset, window := ceilSeconds(d.ResetAfter), max(1, ceilSeconds(res.Period))
	text := res.cr.headerText(res.Rule, d.Limit, window)
	if text == nil { // not a limit of the policy's (a store's own limit, a tier cap)
		text = &headerText{limit: strconv.FormatInt(d.Limit, 10), policy: policyText(res.Rule, d.Limit, window)}
	}
	b.Grow(72 + len(res.Rule))
	start := b.Len()
	var ends [3]int
	writeInt(b, d.Remaining)
	ends[0] = b.Len()
	writeInt(b, res.at.Unix()+reset)
	ends[1] = b.Len()
	b.WriteByte('"')
	b.WriteString(res.Rule)
	b.WriteString(`";r=`)
	writeInt(b, d.Remaining)
	b.WriteString(";t=")
	writeInt(b, reset)
	ends[2] = b.Len()
	if !res.Allowed {
		writeInt(b, res.RetryAfter)
	}
	all := b.String()
	vals := make([]string, 6)
	vals[0], vals[1], vals[2] = text.limit, all[start:ends[0]], all[ends[0]:ends[1]]
	vals[3], vals[4], vals[5] = text.policy, all[ends[1]:ends[2]], all[ends[2]:]
	n := 5
	if !res.Allowed {
		n = 6
	}
	keys := [6]string{keyLimit, keyRemaining, keyReset, keyPolicy, keyRateLimit, keyRetryAfter}
	for i := range n {
		h[keys[i]] = vals[i : i+1 : i+1]
	}
}

// writeInt writes v in decimal.
func writeInt(b *strings.Builder, v int64) {
	var n [20]byte
	b.Write(strconv.AppendInt(n[:0], v, 10))
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
		policy: policyText(rule, limit, window)}
}

// policyText is the RateLimit-Policy value: "<rule>";q=<limit>;w=<window>.
func policyText(rule string, limit, window int64) string {
	var b strings.Builder
	b.Grow(len(rule) + 48)
	b.WriteByte('"')
	b.WriteString(rule)
	b.WriteString(`";q=`)
	writeInt(&b, limit)
	b.WriteString(";w=")
	writeInt(&b, window)
	return b.String()
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
}
