package overload

import (
	"bytes"
	"fmt"
	"net/http"
)

// Class is what became of one scheduled request. Every scheduled request
// ends in exactly one class.
type Class uint8

const (
	OK         Class = iota // any 2xx
	OverQuota               // 429: the key's quota is spent
	Backend503              // 503 from the backend itself (MarkerHeader set)
	Shed                    // 503 from throttled, reason "shed", by a rule's multiplier
	Breaker                 // 503 from throttled, reason "breaker_open"
	Bulkhead                // 503 from throttled, reason "bulkhead"
	Capped                  // 503 from throttled, reason "shed", rule "tier_admission": the tier cap
	Gated                   // 503 from throttled, reason "shed", rule "concurrency": the inner loop's gate
	Other                   // any other answer, or a 503 without a known reason
	Failed                  // no answer: transport error or timeout
	Dropped                 // never sent: the in-flight bound was hit
	NumClasses
)

var classNames = [NumClasses]string{"ok", "over_quota", "backend_503", "shed", "breaker", "bulkhead", "capped", "gated",
	"other", "failed", "dropped"}

func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// MarkerHeader marks the backend's own 503s, so clients can tell them from
// throttled's.
const MarkerHeader = "X-Backend-Overloaded"

// Classify classifies an answer from its status, headers and (for a 503)
// the start of its body, which throttled fills with a JSON refusal whose
// "reason" is "shed", "breaker_open" or "bulkhead", and whose "rule" tells
// the mechanism that shed.
func Classify(status int, h http.Header, body []byte) Class {
	switch {
	case status >= 200 && status < 300:
		return OK
	case status == http.StatusTooManyRequests:
		return OverQuota
	case status != http.StatusServiceUnavailable:
		return Other
	case h.Get(MarkerHeader) != "":
		return Backend503
	}
	switch string(fieldOf(body, "reason")) {
	case "shed":
		return shedBy(fieldOf(body, "rule"))
	case "breaker_open":
		return Breaker
	case "bulkhead":
		return Bulkhead
	}
	return Other
}

// shedBy is the class of a shed by the refusal's rule.
func shedBy(rule []byte) Class {
	switch string(rule) {
	case "tier_admission":
		return Capped
	case "concurrency":
		return Gated
	}
	return Shed
}

// fieldOf is the string value of the field name of a flat JSON object,
// without decoding the rest (nil if there is none).
func fieldOf(body []byte, name string) []byte {
	key := `"` + name + `"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(body[i+len(key):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return nil
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '"' {
		return nil
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		return nil
	}
	return rest[1 : 1+end]
}
