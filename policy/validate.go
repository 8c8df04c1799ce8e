package policy

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid reports input that fails validation. Validation errors are
// *FieldError values that wrap it.
var ErrInvalid = errors.New("policy: invalid input")

// FieldError names the field that is wrong, as a path into the Config
// ("tiers.free.rate", "rules[2].key", "assignments.k1") or the request body.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "policy: " + e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldErr(field, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// ValidateConfig checks c completely and returns the first problem as a
// *FieldError (see ConfigErrors).
func ValidateConfig(c Config) error {
	if errs := ConfigErrors(c); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// ConfigErrors checks c completely and returns every problem it finds as
// a *FieldError: tiers by name, then the default and anonymous tiers, rules
// in order, assignments by key. A Config without those problems is then
// compiled and its enforce.Policy validated (what only the whole policy
// shows: a rule's cost beyond a tier's capacity, a burst that never
// refills); the first problem there is reported, naming its field.
func ConfigErrors(c Config) []error {
	errs := ownErrors(c)
	if len(errs) > 0 {
		return errs
	}
	if err := validateCompiled(c); err != nil {
		return []error{err}
	}
	return nil
}

// ownErrors are the problems of c field by field.
func ownErrors(c Config) errList {
	var errs errList
	if len(c.Tiers) == 0 {
		errs.add(fieldErr("tiers", "at least one tier is needed"))
	}
	if len(c.Tiers) > MaxTiers {
		errs.add(fieldErr("tiers", "%d tiers: at most %d", len(c.Tiers), MaxTiers))
	}
	for _, name := range sortedKeys(c.Tiers) {
		errs.add(validateTier(name, c.Tiers[name])...)
	}
	for _, f := range []struct{ field, tier string }{{"default_tier", c.DefaultTier}, {"anonymous_tier", c.AnonymousTier},
		{"unmatched_tier", c.UnmatchedTier}} {
		if _, ok := c.Tiers[f.tier]; f.tier != "" && !ok {
			errs.add(fieldErr(f.field, "no tier named %q", f.tier))
		}
	}
	errs.add(configBounds["headers"].checkEnum("headers", c.Headers))
	errs.add(validateRules(c.Rules)...)
	errs.add(validateAssignments(c.Assignments, c.Tiers))
	return errs
}

func validateTier(name string, t Tier) []error {
	p, b := "tiers."+name, tierBounds
	var errs errList
	if !nameRE.MatchString(name) {
		errs.add(fieldErr(p+".name", "%q: want 1-64 of [A-Za-z0-9_.-], starting with a letter or digit", name))
	}
	errs.add(checkNum(b["rate"], p+".rate", t.Rate), b["period"].checkDur(p+".period", t.Period),
		checkNum(b["burst"], p+".burst", t.Burst), b["algorithm"].checkEnum(p+".algorithm", t.Algorithm),
		checkNum(b["priority"], p+".priority", int64(t.Priority)))
	if len(errs) == 0 {
		errs.add(checkAlign(p, t.Align, t.Algorithm, t.Period))
	}
	errs.add(validateAIMD(p, t)...)
	return errs
}

func validateAIMD(p string, t Tier) []error {
	var errs errList
	for _, f := range []struct {
		name string
		v    float64
	}{{"alpha", t.Alpha}, {"beta", t.Beta}, {"floor", t.Floor}, {"ceiling", t.Ceiling}} {
		errs.add(checkNum(tierBounds[f.name], p+"."+f.name, f.v))
	}
	if d := t.WithDefaults(); len(errs) == 0 && d.Floor > d.Ceiling {
		errs.add(fieldErr(p+".floor", "%v exceeds ceiling %v", d.Floor, d.Ceiling))
	}
	return errs
}

func validateRules(rules []Rule) []error {
	var errs errList
	if len(rules) > MaxRules {
		errs.add(fieldErr("rules", "%d rules: at most %d", len(rules), MaxRules))
	}
	seen := make(map[string]bool, len(rules))
	for i, r := range rules {
		p := "rules[" + strconv.Itoa(i) + "]"
		if !nameRE.MatchString(r.Name) {
			errs.add(fieldErr(p+".name", "%q: want 1-64 of [A-Za-z0-9_.-], starting with a letter or digit", r.Name))
		} else if seen[r.Name] {
			errs.add(fieldErr(p+".name", "%q: duplicate rule name", r.Name))
		}
		seen[r.Name] = true
		errs.add(validateMatch(p, r), validateKeys(p, r))
		errs.add(validateLimit(p, r)...)
		errs.add(validateMode(p, r)...)
		errs.add(validateLease(p, r)...)
	}
	return errs
}

func validateMatch(p string, r Rule) error {
	path := r.Match.Path
	switch {
	case !strings.HasPrefix(path, "/"):
		return fieldErr(p+".match.path", "%q: must start with /", path)
	case len(path) > ruleBounds["match.path"].MaxLen:
		return fieldErr(p+".match.path", "%d bytes: at most %d", len(path), ruleBounds["match.path"].MaxLen)
	case !printable(path) || !pathRE.MatchString(path):
		return fieldErr(p+".match.path", "%q: no spaces, control characters, ? or #", path)
	case len(r.Match.Methods) > ruleBounds["match.methods"].MaxItems:
		return fieldErr(p+".match.methods", "%d methods: at most %d", len(r.Match.Methods), ruleBounds["match.methods"].MaxItems)
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
	if b := ruleBounds["key"]; len(r.Key) < b.MinItems || len(r.Key) > b.MaxItems {
		return fieldErr(p+".key", "%d key sources: want %d..%d", len(r.Key), b.MinItems, b.MaxItems)
	}
	for _, k := range r.Key {
		if !keySourceRE.MatchString(k) {
			return fieldErr(p+".key", "%q: want ip, api_key, jwt, client, route or header:NAME", k)
		}
	}
	return nil
}

func validateLimit(p string, r Rule) []error {
	b := ruleBounds
	var errs errList
	errs.add(checkNum(b["limit"], p+".limit", r.Limit), checkNum(b["cost"], p+".cost", r.Cost))
	if len(r.Limits) > 0 {
		return append(errs, validateLimits(p, r)...)
	}
	if r.Limit == 0 {
		if r.Align != "" {
			errs.add(fieldErr(p+".align", "set without limit: a rule with limit 0 counts with its tier's windows"))
		}
		if r.Algorithm != "" {
			errs.add(fieldErr(p+".algorithm", "set without limit: a rule with limit 0 counts with its tier's algorithm"))
		}
		if r.Period != 0 {
			errs.add(fieldErr(p+".period", "set without limit: a rule with limit 0 uses its tier's period"))
		}
		if r.Burst != 0 {
			errs.add(fieldErr(p+".burst", "set without limit: a rule with limit 0 uses its tier's burst"))
		}
		return errs
	}
	errs.add(b["algorithm"].checkEnum(p+".algorithm", r.Algorithm), b["period"].checkDur(p+".period", r.Period),
		checkNum(b["burst"], p+".burst", r.Burst))
	if len(errs) == 0 {
		errs.add(checkAlign(p, r.Align, r.Algorithm, r.Period))
	}
	if c := capacity(r.Limit, r.Burst, r.Algorithm); len(errs) == 0 && r.Cost > c {
		errs.add(fieldErr(p+".cost", "%d exceeds the rule's capacity %d", r.Cost, c))
	}
	return errs
}

func validateMode(p string, r Rule) []error {
	var errs errList
	errs.add(ruleBounds["mode"].checkEnum(p+".mode", r.Mode), ruleBounds["fallback"].checkEnum(p+".fallback", r.Fallback),
		ruleBounds["headers"].checkEnum(p+".headers", r.Headers))
	if mw := ruleBounds["max_wait"].MaxDur; r.Mode == "delay" && (r.MaxWait <= 0 || r.MaxWait.D() > mw) {
		errs.add(fieldErr(p+".max_wait", "%v: delay mode needs 0 < max_wait <= %s", r.MaxWait, boundDur(mw)))
	}
	if r.Mode != "delay" && r.MaxWait != 0 {
		errs.add(fieldErr(p+".max_wait", "%v: only delay mode waits", r.MaxWait))
	}
	return errs
}

// validateLease checks a rule's lease mode: its size and TTL, and, for a
// rule with its own limit, that it counts with a bucket and its capacity
// can grant a lease (a rule with limit 0 or several limits is checked when
// leasing: tokenlease decides window algorithms exactly).
func validateLease(p string, r Rule) []error {
	l := r.Lease
	if l == nil {
		return nil
	}
	var errs errList
	errs.add(checkNum(ruleBounds["lease.size"], p+".lease.size", l.Size),
		checkNum(ruleBounds["lease.max_keys"], p+".lease.max_keys", l.MaxKeys))
	if b := ruleBounds["lease.ttl"]; l.TTL < 0 || l.TTL.D() > b.MaxDur {
		errs.add(fieldErr(p+".lease.ttl", "%v: want 0 (1s)..%s", l.TTL, boundDur(b.MaxDur)))
	}
	switch {
	case r.Limit == 0 || len(errs) > 0:
	case algorithmOf(r.Algorithm).IsWindow():
		errs.add(fieldErr(p+".lease", "%s rules do not lease: want token_bucket, gcra or leaky_bucket", r.Algorithm))
	case l.Size > capacity(r.Limit, r.Burst, r.Algorithm):
		errs.add(fieldErr(p+".lease.size", "%d exceeds the rule's capacity %d: no lease could be granted",
			l.Size, capacity(r.Limit, r.Burst, r.Algorithm)))
	}
	return errs
}

func validateAssignments(a map[string]string, tiers map[string]Tier) error {
	if len(a) > MaxAssignments {
		return fieldErr("assignments", "%d assignments: at most %d", len(a), MaxAssignments)
	}
	for _, key := range sortedKeys(a) {
		if err := CheckKey(key); err != nil {
			return err
		}
		if _, ok := tiers[a[key]]; !ok {
			return fieldErr("assignments."+key+".tier", "no tier named %q", a[key])
		}
	}
	return nil
}

// CheckKey validates a client key of an assignment (in /v1/keys/{key}
// too), naming the field "key".
func CheckKey(key string) error {
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
		if err := CheckMultiplier(f+".multiplier", p.Multiplier); err != nil {
			return err
		}
		if p.Until.IsZero() {
			return fieldErr(f+".until", "missing expiry")
		}
	}
	return nil
}

// CheckMultiplier validates a pinned multiplier at field: in (0, 1].
func CheckMultiplier(field string, v float64) error {
	return checkNum(multiplierBound, field, v)
}

// ValidName reports whether s is a valid name of a tier or a rule (and of
// an admin token): enforce.NamePattern.
func ValidName(s string) bool { return nameRE.MatchString(s) }

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

// validateCompiled compiles c and validates the enforce.Policy it makes.
func validateCompiled(c Config) error {
	p, err := Compile(c)
	if err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return &FieldError{Field: compiledField(err), Msg: err.Error()}
	}
	return nil
}

// compiledFieldRE finds the field in an error of enforce.Policy.Validate:
// "tiers[0] (free): ...limit..." or "rules[2] (api): cost ...".
var (
	compiledFieldRE = regexp.MustCompile(`\b(tiers|rules)\[(\d+)\](?: \(([^)]*)\))?:?(.*)`)
	compiledWordRE  = regexp.MustCompile(`\b(name|match\.path|match\.methods|key|mode|max_wait|cost|limits|algorithm|limit|period|burst|align|fallback|priority|lease)\b`)
)

// compiledField names the field of an error of enforce.Policy.Validate on
// a compiled Config ("config" when it names none).
func compiledField(err error) string {
	msg := err.Error()
	m := compiledFieldRE.FindStringSubmatch(msg)
	if m == nil {
		for _, f := range []string{"default_tier", "anonymous_tier", "unmatched_tier"} {
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
	if w := compiledWordRE.FindString(m[4]); w != "" {
		if m[1] == "tiers" && w == "limit" {
			w = "rate"
		}
		field += "." + w
	}
	return field
}
