package enforce

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
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
// hides them), and Retry-After on a refusal. All values share one
// string and one slice.
func (res *Result) WriteHeaders(h http.Header) {
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
	reset := ceilSeconds(d.ResetAfter)
	var ends [6]int
	b := make([]byte, 0, 160+2*len(res.Rule))
	b = strconv.AppendInt(b, d.Limit, 10)
	ends[0] = len(b)
	b = strconv.AppendInt(b, d.Remaining, 10)
	ends[1] = len(b)
	b = strconv.AppendInt(b, res.at.Unix()+reset, 10)
	ends[2] = len(b)
	b = append(append(append(b, '"'), res.Rule...), `";q=`...)
	b = strconv.AppendInt(b, d.Limit, 10)
	b = strconv.AppendInt(append(b, ";w="...), max(1, ceilSeconds(res.Period)), 10)
	ends[3] = len(b)
	b = append(append(append(b, '"'), res.Rule...), `";r=`...)
	b = strconv.AppendInt(b, d.Remaining, 10)
	b = strconv.AppendInt(append(b, ";t="...), reset, 10)
	ends[4] = len(b)
	n := 5
	if !res.Allowed {
		b = strconv.AppendInt(b, res.RetryAfter, 10)
		ends[5] = len(b)
		n = 6
	}
	all := string(b)
	vals := make([]string, n)
	start := 0
	for i := range n {
		vals[i] = all[start:ends[i]]
		start = ends[i]
	}
	keys := [6]string{keyLimit, keyRemaining, keyReset, keyPolicy, keyRateLimit, keyRetryAfter}
	for i := range n {
		h[keys[i]] = vals[i : i+1 : i+1]
	}
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
