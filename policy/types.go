package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Duration is a time.Duration written in JSON and YAML as a Go duration
// string ("1s", "250ms", "1h30m"; as FormatDuration writes it). Negative or unparsable values are errors
// naming the value.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return limiter.FormatDuration(time.Duration(d)) }

// MarshalText writes d as FormatDuration does, Month as "1mo".
func (d Duration) MarshalText() ([]byte, error) {
	if d == Month {
		return []byte("1mo"), nil
	}
	return []byte(d.String()), nil
}

// Month is the period "1mo": with align calendar, the calendar month
// (limiter.Month).
const Month = Duration(limiter.Month)

// UnmarshalText reads a Go duration string such as "1s", whole days first
// if any ("30d", "1d12h": bounds are written so), or "1mo" (Month).
func (d *Duration) UnmarshalText(b []byte) error {
	if string(b) == "1mo" {
		*d = Month
		return nil
	}
	v, err := parseDuration(string(b))
	if err != nil {
		return fmt.Errorf("policy: duration %q: want a Go duration such as \"1s\", \"250ms\" or \"30d\", or \"1mo\"", b)
	}
	if v < 0 {
		return fmt.Errorf("policy: duration %q must not be negative", b)
	}
	*d = Duration(v)
	return nil
}

// parseDuration is time.ParseDuration with an optional leading count of
// whole days ("366d", "1d12h").
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 16)
	if err != nil || days == "" {
		return 0, fmt.Errorf("policy: bad days in %q", s)
	}
	v := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("policy: bad duration after the days in %q", s)
		}
		v += r
	}
	return v, nil
}

// MarshalJSON writes d as a JSON string.
func (d Duration) MarshalJSON() ([]byte, error) {
	b, _ := d.MarshalText()
	return json.Marshal(string(b))
}

// UnmarshalJSON reads a JSON string holding a Go duration; null leaves d
// unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("policy: duration %s: want a string such as \"1s\"", clip(b))
	}
	return d.UnmarshalText([]byte(s))
}

// UnmarshalYAML reads a YAML scalar holding a Go duration (the unmarshal
// func interface understood by gopkg.in/yaml.v2 and v3).
func (d *Duration) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("policy: duration: want a string such as \"1s\": %v", err)
	}
	return d.UnmarshalText([]byte(s))
}

// KeySources names where a rule's bucket key comes from: "ip", "api_key",
// "jwt", "client", "route" or "header:NAME". In JSON and YAML it is one
// string or a list of strings; it is always written as a list.
type KeySources []string

// UnmarshalJSON accepts "ip" or ["ip", "header:X-Tenant"].
func (k *KeySources) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("policy: key %s: %v", clip(b), err)
		}
		*k = KeySources{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("policy: key %s: want a string or a list of strings", clip(b))
	}
	*k = l
	return nil
}

// UnmarshalYAML accepts a string or a list of strings.
func (k *KeySources) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		*k = KeySources{s}
		return nil
	}
	var l []string
	if err := unmarshal(&l); err != nil {
		return fmt.Errorf("policy: key: want a string or a list of strings: %v", err)
	}
	*k = l
	return nil
}

// clip shortens raw input quoted in error messages.
func clip(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// Tier is a class of clients: its quota (Rate per Period, Burst), the
// algorithm that counts it, its priority (0 is the highest) and the AIMD
// parameters the controller uses to scale it under load. The tier's name is
// its key in Config.Tiers and its URL segment. It is the one configured
// form of a tier; enforcement (enforce.Tier) and the law (controller.Tier)
// each take the part they need of it.
//
// Align "calendar" (with algorithm fixed_window and period 1m, 1h, 24h or
// 1mo) counts in UTC calendar units. An Unlimited tier's clients are never
// refused by a rule (429 or 503); their requests are still counted against
// its rate.
type Tier struct {
	Rate      int64    `json:"rate" yaml:"rate"`
	Period    Duration `json:"period" yaml:"period"`
	Burst     int64    `json:"burst,omitempty" yaml:"burst,omitempty"`
	Algorithm string   `json:"algorithm,omitempty" yaml:"algorithm,omitempty"`
	Align     string   `json:"align,omitempty" yaml:"align,omitempty"`
	Unlimited bool     `json:"unlimited,omitempty" yaml:"unlimited,omitempty"`
	Priority  int      `json:"priority" yaml:"priority"`
	Alpha     float64  `json:"alpha,omitempty" yaml:"alpha,omitempty"`
	Beta      float64  `json:"beta,omitempty" yaml:"beta,omitempty"`
	Floor     float64  `json:"floor,omitempty" yaml:"floor,omitempty"`
	Ceiling   float64  `json:"ceiling,omitempty" yaml:"ceiling,omitempty"`
}

// WithDefaults returns t with zero AIMD parameters and algorithm filled in:
// the defaults and the floor rule of multiplier.AIMD.WithDefaults (a zero
// floor is min(multiplier.DefaultFloor, ceiling)).
func (t Tier) WithDefaults() Tier {
	a := multiplier.AIMD{Alpha: t.Alpha, Beta: t.Beta, Floor: t.Floor, Ceiling: t.Ceiling}.WithDefaults()
	t.Alpha, t.Beta, t.Floor, t.Ceiling = a.Alpha, a.Beta, a.Floor, a.Ceiling
	if t.Algorithm == "" {
		t.Algorithm = limiter.TokenBucket.String()
	}
	return t
}

// Match selects the requests a rule applies to: a path pattern (see
// limiter.HTTPRule) and methods (empty: every method).
type Match struct {
	Path    string   `json:"path" yaml:"path"`
	Methods []string `json:"methods,omitempty" yaml:"methods,omitempty"`
}

// Rule limits the HTTP requests it matches, per key. Algorithm, Limit,
// Period, Burst and Align are optional: with Limit 0 the rule spends the
// quota of the client's tier. Limits, instead of them, gives the rule
// several limits that must all pass (say 10 per second and 10,000 per
// calendar day). HideClientHeaders leaves the rule out of the rate-limit
// response headers; Headers picks which of them it writes.
type Rule struct {
	Name              string     `json:"name" yaml:"name"`
	Match             Match      `json:"match" yaml:"match"`
	Key               KeySources `json:"key" yaml:"key"`
	Algorithm         string     `json:"algorithm,omitempty" yaml:"algorithm,omitempty"`
	Limit             int64      `json:"limit,omitempty" yaml:"limit,omitempty"`
	Period            Duration   `json:"period,omitempty" yaml:"period,omitempty"`
	Burst             int64      `json:"burst,omitempty" yaml:"burst,omitempty"`
	Align             string     `json:"align,omitempty" yaml:"align,omitempty"`
	Limits            []Limit    `json:"limits,omitempty" yaml:"limits,omitempty"`
	Cost              int64      `json:"cost,omitempty" yaml:"cost,omitempty"`
	Mode              string     `json:"mode,omitempty" yaml:"mode,omitempty"`
	MaxWait           Duration   `json:"max_wait,omitempty" yaml:"max_wait,omitempty"`
	Fallback          string     `json:"fallback,omitempty" yaml:"fallback,omitempty"`
	HideClientHeaders bool       `json:"hide_client_headers,omitempty" yaml:"hide_client_headers,omitempty"`
	// Headers is the rule's set of rate-limit headers (both, ietf, legacy
	// or none); "": the Config's.
	Headers string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Lease, when set, turns on lease mode for the rule (see Lease).
	Lease *Lease `json:"lease,omitempty" yaml:"lease,omitempty"`
}

// Limit is one of a rule's several limits.
type Limit struct {
	Algorithm string   `json:"algorithm,omitempty" yaml:"algorithm,omitempty"`
	Limit     int64    `json:"limit" yaml:"limit"`
	Period    Duration `json:"period" yaml:"period"`
	Burst     int64    `json:"burst,omitempty" yaml:"burst,omitempty"`
	Align     string   `json:"align,omitempty" yaml:"align,omitempty"`
}

// Lease is a rule's lease mode: each instance takes up to Size tokens per
// key at once from the shared store (Redis) and spends them locally, so
// most decisions cost no round trip. Across N instances the rule admits at
// most N × Size more than the shared store alone would. Only the token
// bucket, GCRA and leaky bucket lease; a rule whose tier counts with a
// window algorithm decides exactly.
type Lease struct {
	Size int64 `json:"size" yaml:"size"`
	// TTL is how long unspent leased tokens live; 0 means 1 s.
	TTL Duration `json:"ttl,omitempty" yaml:"ttl,omitempty"`
	// MaxKeys bounds the keys an instance keeps leases for, the key idle
	// longest evicted first (its unspent tokens are lost: it under-admits);
	// 0 means 100,000.
	MaxKeys int64 `json:"max_keys,omitempty" yaml:"max_keys,omitempty"`
}

// Config is the whole enforcement configuration: what the admin API edits,
// what a configuration file's tiers, rules and assignments are, and what
// Compile turns into an enforce.Policy.
type Config struct {
	Tiers         map[string]Tier `json:"tiers" yaml:"tiers"`
	Rules         []Rule          `json:"rules" yaml:"rules"`
	DefaultTier   string          `json:"default_tier,omitempty" yaml:"default_tier,omitempty"`
	AnonymousTier string          `json:"anonymous_tier,omitempty" yaml:"anonymous_tier,omitempty"`
	// UnmatchedTier is the tier of requests that match no rule at the
	// inner loop's gate and the bulkheads; "": the lowest priority.
	UnmatchedTier string            `json:"unmatched_tier,omitempty" yaml:"unmatched_tier,omitempty"`
	Assignments   map[string]string `json:"assignments,omitempty" yaml:"assignments,omitempty"`
	// Headers is the set of rate-limit headers of the rules that name none
	// of their own: both (""), ietf, legacy or none (enforce.HeaderSet).
	Headers string `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// Pin fixes a tier's multiplier until a time, overriding the controller.
type Pin struct {
	Tier       string    `json:"tier" yaml:"tier"`
	Multiplier float64   `json:"multiplier" yaml:"multiplier"`
	Until      time.Time `json:"until" yaml:"until"`
}

// Active reports whether the pin still applies at now.
func (p Pin) Active(now time.Time) bool { return now.Before(p.Until) }

// AuditEntry records one write: who made it, when, and the resource before
// and after (JSON null when absent).
type AuditEntry struct {
	At       time.Time       `json:"at" yaml:"at"`
	Who      string          `json:"who" yaml:"who"`
	Action   string          `json:"action" yaml:"action"`
	Resource string          `json:"resource" yaml:"resource"`
	Version  int64           `json:"version" yaml:"version"`
	Before   json.RawMessage `json:"before" yaml:"before"`
	After    json.RawMessage `json:"after" yaml:"after"`
}

// Snapshot is the stored document: the Config, the pins, and what the API
// needs for concurrency control. It is stored as one JSON value and written
// whole, so a change is applied completely or not at all.
type Snapshot struct {
	// Version counts writes; 0 means nothing is stored yet.
	Version int64          `json:"version" yaml:"version"`
	Config  Config         `json:"config" yaml:"config"`
	Pins    map[string]Pin `json:"pins,omitempty" yaml:"pins,omitempty"`
	// Revisions maps a resource ("tiers/free", "rules", "keys/K",
	// "pins/free") to the Version that last wrote it; ETags derive from it.
	Revisions map[string]int64 `json:"revisions,omitempty" yaml:"revisions,omitempty"`
	UpdatedAt time.Time        `json:"updated_at" yaml:"updated_at"`
	UpdatedBy string           `json:"updated_by,omitempty" yaml:"updated_by,omitempty"`
	// Generation names the lineage of this document: set when an empty
	// store is seeded, kept by every write (see ErrStoreReset).
	Generation string `json:"generation,omitempty" yaml:"generation,omitempty"`
}

// ActivePins returns the pins that still apply at now, by tier.
func (s Snapshot) ActivePins(now time.Time) map[string]Pin {
	out := make(map[string]Pin, len(s.Pins))
	for t, p := range s.Pins {
		if p.Active(now) {
			out[t] = p
		}
	}
	return out
}

// Rules returns the rules of s, an empty list rather than nil.
func (s Snapshot) Rules() []Rule {
	if s.Config.Rules == nil {
		return []Rule{}
	}
	return s.Config.Rules
}

// clone deep-copies s through its JSON form.
func (s Snapshot) clone() Snapshot {
	b, err := json.Marshal(s)
	if err != nil {
		panic("policy: snapshot does not marshal: " + err.Error())
	}
	var c Snapshot
	if err := json.Unmarshal(b, &c); err != nil {
		panic("policy: snapshot does not round-trip: " + err.Error())
	}
	return c
}

// canonical is the JSON form of v that ETags, stored documents and audit
// entries use.
func canonical(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("policy: cannot marshal %T: %v", v, err))
	}
	return b
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// quoteList renders list for error messages: "a, b or c".
func quoteList(list []string) string {
	if len(list) < 2 {
		return strings.Join(list, "")
	}
	return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1]
}
