package api

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid reports input that fails validation. Validation errors are
// *FieldError values that wrap it.
var ErrInvalid = errors.New("api: invalid input")

// FieldError names the field that is wrong, as a path into the Config
// ("tiers.free.rate", "rules[2].key", "assignments.k1") or the request body.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "api: " + e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldErr(field, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Limits of a Config: anything beyond them is refused as absurd.
const (
	MaxRate        = 1_000_000_000_000 // rate, limit, burst and cost
	MinPeriod      = time.Millisecond
	MaxPeriod      = 366 * 24 * time.Hour
	MaxPriority    = 1000
	MaxMaxWait     = time.Minute
	MaxLeaseSize   = 1_000_000
	MaxLeaseTTL    = time.Minute
	MaxTiers       = 1000
	MaxRules       = 1000
	MaxAssignments = 100_000
	MaxKeyLen      = 256 // bytes of an assigned client key
	MaxPathLen     = 1024
	MaxKeySources  = 8
	MaxPinTTL      = 30 * 24 * time.Hour
)

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	methodRE = regexp.MustCompile(`^[A-Z]{1,16}$`)
	headerRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
)

// ValidateConfig checks c on its own, without a Validate hook, and returns
// the first problem as a *FieldError.
func ValidateConfig(c Config) error {
	if len(c.Tiers) > MaxTiers {
		return fieldErr("tiers", "%d tiers: at most %d", len(c.Tiers), MaxTiers)
	}
	for _, name := range sortedKeys(c.Tiers) {
		if err := validateTier(name, c.Tiers[name]); err != nil {
			return err
		}
	}
	for _, f := range []struct{ field, tier string }{{"default_tier", c.DefaultTier}, {"anonymous_tier", c.AnonymousTier}} {
		if _, ok := c.Tiers[f.tier]; f.tier != "" && !ok {
			return fieldErr(f.field, "no tier named %q", f.tier)
		}
	}
	if err := validateRules(c.Rules); err != nil {
		return err
	}
	return validateAssignments(c.Assignments, c.Tiers)
}

func validateTier(name string, t Tier) error {
	p := "tiers." + name
	if !nameRE.MatchString(name) {
		return fieldErr(p+".name", "%q: want 1-64 of [A-Za-z0-9_.-], starting with a letter or digit", name)
	}
	if err := checkInt(p+".rate", t.Rate, 1, MaxRate); err != nil {
		return err
	}
	if err := checkPeriod(p+".period", t.Period); err != nil {
		return err
	}
	if err := checkInt(p+".burst", t.Burst, 0, MaxRate); err != nil {
		return err
	}
	if t.Algorithm != "" && !contains(algorithms, t.Algorithm) {
		return fieldErr(p+".algorithm", "%q: want %s", t.Algorithm, quoteList(algorithms))
	}
	if err := checkInt(p+".priority", int64(t.Priority), 0, MaxPriority); err != nil {
		return err
	}
	return validateAIMD(p, t)
}

func validateAIMD(p string, t Tier) error {
	for _, f := range []struct {
		name   string
		v      float64
		openHi bool
	}{{"alpha", t.Alpha, false}, {"beta", t.Beta, true}, {"floor", t.Floor, false}, {"ceiling", t.Ceiling, false}} {
		if err := checkUnit(p+"."+f.name, f.v, f.openHi); err != nil {
			return err
		}
	}
	if d := t.WithDefaults(); d.Floor > d.Ceiling {
		return fieldErr(p+".floor", "%v exceeds ceiling %v", d.Floor, d.Ceiling)
	}
	return nil
}

func validateRules(rules []Rule) error {
	if len(rules) > MaxRules {
		return fieldErr("rules", "%d rules: at most %d", len(rules), MaxRules)
	}
	seen := make(map[string]bool, len(rules))
	for i, r := range rules {
		p := "rules[" + strconv.Itoa(i) + "]"
		if !nameRE.MatchString(r.Name) {
			return fieldErr(p+".name", "%q: want 1-64 of [A-Za-z0-9_.-], starting with a letter or digit", r.Name)
		}
		if seen[r.Name] {
			return fieldErr(p+".name", "%q: duplicate rule name", r.Name)
		}
		seen[r.Name] = true
		for _, check := range []func(string, Rule) error{validateMatch, validateKeys, validateLimit, validateMode, validateLease} {
			if err := check(p, r); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateMatch(p string, r Rule) error {
	path := r.Match.Path
	switch {
	case !strings.HasPrefix(path, "/"):
		return fieldErr(p+".match.path", "%q: must start with /", path)
	case len(path) > MaxPathLen:
		return fieldErr(p+".match.path", "%d bytes: at most %d", len(path), MaxPathLen)
	case !printable(path) || strings.ContainsAny(path, " ?#"):
		return fieldErr(p+".match.path", "%q: no spaces, control characters, ? or #", path)
	case len(r.Match.Methods) > 16:
		return fieldErr(p+".match.methods", "%d methods: at most 16", len(r.Match.Methods))
	}
	for j, m := range r.Match.Methods {
		if !methodRE.MatchString(m) {
			return fieldErr(p+".match.methods", "%q: want an upper-case HTTP method", m)
		}
		if contains(r.Match.Methods[:j], m) {
			return fieldErr(p+".match.methods", "%q: duplicate", m)
		}
	}
	return nil
}

func validateKeys(p string, r Rule) error {
	if len(r.Key) == 0 || len(r.Key) > MaxKeySources {
		return fieldErr(p+".key", "%d key sources: want 1..%d", len(r.Key), MaxKeySources)
	}
	for _, k := range r.Key {
		if !validKeySource(k) {
			return fieldErr(p+".key", "%q: want ip, api_key, jwt, client, route or header:NAME", k)
		}
	}
	return nil
}

func validKeySource(k string) bool {
	switch k {
	case "ip", "api_key", "jwt", "client", "route":
		return true
	}
	name, ok := strings.CutPrefix(k, "header:")
	return ok && headerRE.MatchString(name)
}

func validateLimit(p string, r Rule) error {
	if err := checkInt(p+".limit", r.Limit, 0, MaxRate); err != nil {
		return err
	}
	if err := checkInt(p+".cost", r.Cost, 0, MaxRate); err != nil {
		return err
	}
	if r.Limit == 0 {
		switch {
		case r.Algorithm != "":
			return fieldErr(p+".algorithm", "set without limit: a rule with limit 0 counts with its tier's algorithm")
		case r.Period != 0:
			return fieldErr(p+".period", "set without limit: a rule with limit 0 uses its tier's period")
		case r.Burst != 0:
			return fieldErr(p+".burst", "set without limit: a rule with limit 0 uses its tier's burst")
		}
		return nil
	}
	if r.Algorithm != "" && !contains(algorithms, r.Algorithm) {
		return fieldErr(p+".algorithm", "%q: want %s", r.Algorithm, quoteList(algorithms))
	}
	if err := checkPeriod(p+".period", r.Period); err != nil {
		return err
	}
	if err := checkInt(p+".burst", r.Burst, 0, MaxRate); err != nil {
		return err
	}
	capacity := r.Limit
	if r.Burst > 0 && !strings.Contains(r.Algorithm, "window") {
		capacity = r.Burst
	}
	if r.Cost > capacity {
		return fieldErr(p+".cost", "%d exceeds the rule's capacity %d", r.Cost, capacity)
	}
	return nil
}

func validateMode(p string, r Rule) error {
	if r.Mode != "" && !contains(modes, r.Mode) {
		return fieldErr(p+".mode", "%q: want %s", r.Mode, quoteList(modes))
	}
	if r.Fallback != "" && !contains(fallbacks, r.Fallback) {
		return fieldErr(p+".fallback", "%q: want %s", r.Fallback, quoteList(fallbacks))
	}
	if r.Mode == "delay" && (r.MaxWait <= 0 || r.MaxWait.D() > MaxMaxWait) {
		return fieldErr(p+".max_wait", "%v: delay mode needs 0 < max_wait <= %v", r.MaxWait, MaxMaxWait)
	}
	if r.Mode != "delay" && r.MaxWait != 0 {
		return fieldErr(p+".max_wait", "%v: only delay mode waits", r.MaxWait)
	}
	return nil
}

func validateLease(p string, r Rule) error {
	l := r.Lease
	switch {
	case l == nil:
		return nil
	case l.Size < 1 || l.Size > MaxLeaseSize:
		return fieldErr(p+".lease.size", "%d: want 1..%d tokens", l.Size, MaxLeaseSize)
	case l.TTL < 0 || l.TTL.D() > MaxLeaseTTL:
		return fieldErr(p+".lease.ttl", "%v: want 0 (1s) ..%v", l.TTL, MaxLeaseTTL)
	case r.Limit == 0: // the tier's algorithm and capacity: checked when leasing
		return nil
	case strings.Contains(r.Algorithm, "window"):
		return fieldErr(p+".lease", "%s rules do not lease: want token_bucket, gcra or leaky_bucket", r.Algorithm)
	}
	capacity := r.Limit
	if r.Burst > 0 {
		capacity = r.Burst
	}
	if l.Size > capacity {
		return fieldErr(p+".lease.size", "%d exceeds the rule's capacity %d: no lease could be granted", l.Size, capacity)
	}
	return nil
}

func validateAssignments(a map[string]string, tiers map[string]Tier) error {
	if len(a) > MaxAssignments {
		return fieldErr("assignments", "%d assignments: at most %d", len(a), MaxAssignments)
	}
	for _, key := range sortedKeys(a) {
		if err := checkKey(key); err != nil {
			return err
		}
		if _, ok := tiers[a[key]]; !ok {
			return fieldErr("assignments."+key+".tier", "no tier named %q", a[key])
		}
	}
	return nil
}

// checkKey validates a client key used in /v1/keys/{key}.
func checkKey(key string) error {
	if key == "" || len(key) > MaxKeyLen || !printable(key) {
		return fieldErr("key", "%q: want 1-%d bytes of printable UTF-8", clip([]byte(key)), MaxKeyLen)
	}
	return nil
}

// validatePins checks every pin against the tiers of c.
func validatePins(pins map[string]Pin, tiers map[string]Tier) error {
	for _, t := range sortedKeys(pins) {
		p, f := pins[t], "pins."+t
		if _, ok := tiers[t]; !ok {
			return fieldErr(f, "no tier named %q", t)
		}
		if p.Tier != t {
			return fieldErr(f+".tier", "%q: must be the tier it is stored under, %q", p.Tier, t)
		}
		if err := checkMultiplier(f+".multiplier", p.Multiplier); err != nil {
			return err
		}
		if p.Until.IsZero() {
			return fieldErr(f+".until", "missing expiry")
		}
	}
	return nil
}

func checkMultiplier(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1 {
		return fieldErr(field, "%v: want a number in (0, 1]", v)
	}
	return nil
}

func checkInt(field string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return fieldErr(field, "%d: want %d..%d", v, lo, hi)
	}
	return nil
}

func checkPeriod(field string, d Duration) error {
	if d.D() < MinPeriod || d.D() > MaxPeriod {
		return fieldErr(field, "%v: want %v..%v", d, MinPeriod, MaxPeriod)
	}
	return nil
}

// checkUnit accepts 0 (the default) or a finite number in (0, 1], or in
// (0, 1) when openHi.
func checkUnit(field string, v float64, openHi bool) error {
	switch {
	case v == 0:
		return nil
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 || (openHi && v == 1):
		if openHi {
			return fieldErr(field, "%v: want a number in (0, 1), or 0 for the default", v)
		}
		return fieldErr(field, "%v: want a number in (0, 1], or 0 for the default", v)
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// hookFieldRE finds the field in a Validate hook error that does not carry
// a *FieldError, as limiter.Policy.Validate writes it:
// "tiers[0] (free): ...limit..." or "rules[2] (api): cost ...".
var (
	hookFieldRE = regexp.MustCompile(`\b(tiers|rules)\[(\d+)\](?: \(([^)]*)\))?:?(.*)`)
	hookWordRE  = regexp.MustCompile(`\b(name|match\.path|match\.methods|key|mode|max_wait|cost|algorithm|limit|period|burst|fallback|priority|lease)\b`)
)

// hookField names the field of an error from the Validate hook.
func hookField(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	msg := err.Error()
	m := hookFieldRE.FindStringSubmatch(msg)
	if m == nil {
		for _, f := range []string{"default_tier", "anonymous_tier"} {
			if strings.Contains(msg, f) {
				return f
			}
		}
		return "config"
	}
	field := m[1] + "[" + m[2] + "]"
	if m[1] == "tiers" && m[3] != "" {
		field = "tiers." + m[3]
	}
	if w := hookWordRE.FindString(m[4]); w != "" {
		if m[1] == "tiers" && w == "limit" {
			w = "rate"
		}
		field += "." + w
	}
	return field
}
