package limiter

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
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
// restrictive rule, and Retry-After on a refusal.
func (res *Result) WriteHeaders(h http.Header) {
	if !res.Limited {
		return
	}
	d := &res.Decision
	reset := ceilSeconds(d.ResetAfter)
	var buf [96]byte
	h[keyLimit] = []string{strconv.FormatInt(d.Limit, 10)}
	h[keyRemaining] = []string{strconv.FormatInt(d.Remaining, 10)}
	h[keyReset] = []string{strconv.FormatInt(res.at.Unix()+reset, 10)}
	b := append(buf[:0], '"')
	b = append(b, res.Rule...)
	b = append(b, `";q=`...)
	b = strconv.AppendInt(b, d.Limit, 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, max(1, ceilSeconds(res.Period)), 10)
	h[keyPolicy] = []string{string(b)}
	b = append(buf[:0], '"')
	b = append(b, res.Rule...)
	b = append(b, `";r=`...)
	b = strconv.AppendInt(b, d.Remaining, 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, reset, 10)
	h[keyRateLimit] = []string{string(b)}
	if !res.Allowed {
		h[keyRetryAfter] = []string{strconv.FormatInt(res.RetryAfter, 10)}
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
	msg := "too many requests"
	if res.Status == http.StatusServiceUnavailable {
		msg = "service overloaded, retry later"
	}
	b, _ := json.Marshal(Refusal{Error: msg, Reason: res.Decision.Reason.String(),
		RetryAfterSeconds: res.RetryAfter, Tier: res.Tier, Rule: res.Rule})
	return append(b, '\n')
}
