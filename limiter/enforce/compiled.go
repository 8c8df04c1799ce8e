package enforce

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
)

// compiled is a validated Policy prepared for the hot path. It is never
// changed after it is made: a new policy makes a new compiled.
type compiled struct {
	rules     []compiledRule
	tiers     map[string]*Tier
	def, anon *Tier
	unmatched *Tier // of requests that match no rule
}

type compiledRule struct {
	Rule
	path    Path
	methods map[string]bool
	keys    []keySource
	own     []limiter.Rule // the rule's own limits, or nil: the tier's quota
	suffix  []string       // of the bucket keys of own[1:]: "#2", "#3", …
	texts   []headerText   // of each limit the rule may apply (its own, or the tiers')
	// ipKey: a key source is ip; clientKey: one is client (the IP of a
	// client without a key).
	ipKey, clientKey bool
	byTier           []tierLimit // without own limits: each tier's quota as the rule's limit, made once
	sole             bool        // one limit, not a delay rule: askSole may decide it
}

type tierLimit struct {
	t    *Tier
	rule limiter.Rule
}

type keySource struct {
	kind   string // ip, api_key, jwt, client, route, header
	header string // canonical header name for kind "header"
}

func compile(p *Policy) (*compiled, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := &compiled{tiers: make(map[string]*Tier, len(p.Tiers))}
	for i := range p.Tiers {
		t := p.Tiers[i]
		c.tiers[t.Name] = &t
		if c.def == nil || t.Priority > c.def.Priority {
			c.def = c.tiers[t.Name]
		}
	}
	c.unmatched = c.def // the lowest priority
	if p.UnmatchedTier != "" {
		c.unmatched = c.tiers[p.UnmatchedTier]
	}
	if p.DefaultTier != "" {
		c.def = c.tiers[p.DefaultTier]
	}
	c.anon = c.def
	if p.AnonymousTier != "" {
		c.anon = c.tiers[p.AnonymousTier]
	}
	for _, r := range p.Rules {
		cr := compiledRule{Rule: r, path: ParsePath(r.Path)}
		cr.HideHeaders = r.HideHeaders || r.Headers == HeadersNone
		if len(r.Methods) > 0 {
			cr.methods = make(map[string]bool, len(r.Methods))
			for _, m := range r.Methods {
				cr.methods[m] = true
			}
		}
		for _, k := range r.Keys {
			ks := keySource{kind: k}
			if name, ok := strings.CutPrefix(k, "header:"); ok {
				ks = keySource{kind: "header", header: textproto.CanonicalMIMEHeaderKey(name)}
			}
			cr.keys = append(cr.keys, ks)
			cr.ipKey, cr.clientKey = cr.ipKey || k == "ip", cr.clientKey || k == "client"
		}
		cr.ownLimits()
		cr.sole = cr.limits() == 1 && cr.Mode != ModeDelay
		for i := 0; cr.own == nil && i < len(p.Tiers); i++ {
			t := c.tiers[p.Tiers[i].Name]
			cr.byTier = append(cr.byTier, tierLimit{t, cr.rule(t, 0)})
		}
		cr.headerTexts(p.Tiers)
		c.rules = append(c.rules, cr)
	}
	return c, nil
}

// readsIP reports whether the rule's key reads id's IP.
func (r *compiledRule) readsIP(id *identity.Client) bool {
	return r.ipKey || r.clientKey && id.Key() == ""
}

// matches reports whether the rule applies to method and path. It does not
// allocate.
func (r *compiledRule) matches(method, path string) bool {
	if r.methods != nil && !r.methods[method] {
		return false
	}
	return r.path.Match(path)
}

// ownLimits sets own and suffix from the rule's limits: limit i (from 0)
// is named and keyed with "#<i+1>" after the first.
func (r *compiledRule) ownLimits() {
	if r.Limit != 0 {
		r.own = []limiter.Rule{{Name: r.Name, Algorithm: r.Algorithm, Limit: r.Limit, Period: r.Period, Burst: r.Burst,
			Align: r.Align, Fallback: r.Fallback}}
	}
	for i, l := range r.Limits {
		sfx := ""
		if i > 0 {
			sfx = "#" + strconv.Itoa(i+1)
		}
		r.own = append(r.own, limiter.Rule{Name: r.Name + sfx, Algorithm: l.Algorithm, Limit: l.Limit, Period: l.Period,
			Burst: l.Burst, Align: l.Align, Fallback: r.Fallback})
		r.suffix = append(r.suffix, sfx)
	}
}

// headerTexts makes the header text of each limit the rule may apply: its
// own, or each tier's quota.
func (r *compiledRule) headerTexts(tiers []Tier) {
	add := func(limit int64, period time.Duration) {
		if w := max(1, ceilSeconds(period)); r.headerText(r.Name, limit, w) == nil {
			r.texts = append(r.texts, newHeaderText(r.Name, limit, w))
		}
	}
	for _, l := range r.own {
		add(l.Limit, l.Period)
	}
	for i := 0; r.own == nil && i < len(tiers); i++ {
		add(tiers[i].Limit, tiers[i].Period)
	}
}

// headerText is the rule's header text for rule (its name) at limit per
// window seconds, or nil when r is nil, rule is another's name or the
// rule applies no such limit.
func (r *compiledRule) headerText(rule string, limit, window int64) *headerText {
	if r == nil || rule != r.Name {
		return nil
	}
	for i := range r.texts {
		if t := &r.texts[i]; t.limitN == limit && t.window == window {
			return t
		}
	}
	return nil
}

// limits is how many limits the rule applies: its own, or the tier's one.
func (r *compiledRule) limits() int { return max(1, len(r.own)) }

// rule is limit i of the rule for a client of tier t.
func (r *compiledRule) rule(t *Tier, i int) limiter.Rule {
	if r.own != nil {
		return r.own[i]
	}
	for j := range r.byTier { // a few tiers: a pointer compare each
		if r.byTier[j].t == t {
			return r.byTier[j].rule
		}
	}
	return limiter.Rule{Name: r.Name, Algorithm: t.Algorithm, Limit: t.Limit, Period: t.Period, Burst: t.Burst,
		Align: t.Align, Fallback: r.Fallback}
}

// limitKey is the bucket key of limit i, given the rule's bucket key.
func (r *compiledRule) limitKey(key string, i int) string {
	if i == 0 {
		return key
	}
	return key + r.suffix[i]
}

// capacity is the most one request may cost under the rule for tier t:
// the smallest capacity of its limits.
func (r *compiledRule) capacity(t *Tier) int64 {
	c := r.rule(t, 0).Capacity()
	for i := 1; i < r.limits(); i++ {
		c = min(c, r.rule(t, i).Capacity())
	}
	return c
}

// maxKeyLen bounds bucket keys: longer keys are replaced by their SHA-256,
// so a client cannot make the store hold huge keys.
const maxKeyLen = 128

// key builds the bucket key "<rule>[|<tier>]|<len>:<value>[|<len>:<value>…]"
// in a (after what a holds), or reports that a key source is absent from
// the request. Each value is prefixed with its length in bytes, so values
// holding "|" cannot make two requests share a bucket. A rule that spends
// its client's tier quota keys by tier too: clients of two tiers behind one
// IP must not share a bucket whose capacity depends on who asked last.
func (r *compiledRule) key(id *identity.Client, req *http.Request, t *Tier, a *arena) (string, bool) {
	start := a.len()
	r.keyPrefix(a, t)
	for _, k := range r.keys {
		v := k.value(id, req, r)
		if v == "" {
			return "", false
		}
		appendPart(a, v)
	}
	return bounded(a.from(start), r.Name), true
}

// appendPart appends "|<len>:<v>". A length under 100 (every API key or
// IP we have seen) is written digit by digit: strconv's general path was
// 3 % of a request's CPU in process.
func appendPart(a *arena, v string) {
	switch n := len(v); {
	case n < 10:
		a.buf = append(a.buf, '|', byte('0'+n), ':')
	case n < 100:
		a.buf = append(a.buf, '|', byte('0'+n/10), byte('0'+n%10), ':')
	default:
		a.buf = append(a.buf, '|')
		a.buf = strconv.AppendInt(a.buf, int64(n), 10)
		a.buf = append(a.buf, ':')
	}
	a.buf = append(a.buf, v...)
}

// keyOf is the bucket key for key-source values parts, the key the
// middleware makes for a rule whose sources give those values; no parts is
// one bucket for the whole rule.
func (r *compiledRule) keyOf(t *Tier, parts ...string) string {
	var a arena
	r.keyPrefix(&a, t)
	for _, p := range parts {
		appendPart(&a, p)
	}
	return bounded(a.from(0), r.Name)
}

// keyPrefix writes "<rule>[|<tier>]". Rule and tier names are validated
// ([A-Za-z0-9_.-]), so they need no length.
func (r *compiledRule) keyPrefix(a *arena, t *Tier) {
	a.buf = append(a.buf, r.Name...)
	if r.own == nil {
		a.buf = append(a.buf, '|')
		a.buf = append(a.buf, t.Name...)
	}
}

// bounded replaces a key longer than maxKeyLen by the rule name and the
// key's SHA-256 ("<rule>|sha256:<hex>": no tier name or length holds ':').
func bounded(key, rule string) string {
	if len(key) <= maxKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return rule + "|sha256:" + hex.EncodeToString(sum[:])
}

// anonClient prefixes the IP that names an anonymous client for the
// "client" key source.
const anonClient = "ip:"

func (k *keySource) value(id *identity.Client, req *http.Request, r *compiledRule) string {
	switch k.kind {
	case "ip":
		return id.IP
	case "api_key":
		return id.APIKey
	case "jwt":
		return id.Subject
	case "client":
		if key := id.Key(); key != "" {
			return key
		}
		return anonClient + id.IP
	case "route":
		return r.Path
	case "header":
		return req.Header.Get(k.header)
	}
	return ""
}

// tier finds the tier of an identity. An API key is believed when it is
// assigned, when a KeyVerifier accepted it, or with UnassignedDefaultTier;
// otherwise tier drops it from id: the client is its JWT subject, else
// anonymous.
func (c *compiled) tier(id *identity.Client, lookup TierLookup, u UnassignedKeys) *Tier {
	if id.APIKey != "" {
		if t, ok := c.assigned(id.APIKey, lookup); ok {
			return t
		}
		if id.KeyVerified || u == UnassignedDefaultTier {
			return c.def
		}
		id.APIKey = ""
	}
	if id.Subject == "" {
		return c.anon
	}
	if t, ok := c.assigned(id.Subject, lookup); ok {
		return t
	}
	return c.def
}

// assigned is the tier assigned to client, if any (the default tier when
// the assignment names a tier that no longer exists).
func (c *compiled) assigned(client string, lookup TierLookup) (*Tier, bool) {
	if lookup == nil {
		return nil, false
	}
	name, ok := lookup.TierOf(client)
	if !ok {
		return nil, false
	}
	if t := c.tiers[name]; t != nil {
		return t, true
	}
	return c.def, true
}

// Path is a path pattern, matched by segments as a prefix: "/" matches
// every path, "/api" matches "/api" and "/api/x" but not "/apix", a
// ":name" segment matches any one segment and "*" matches the rest. Rules
// and the sidecar's per-route bulkheads and breakers all match with it.
type Path struct {
	pattern  string
	segments []string // pattern split on "/"
}

// ParsePath compiles a pattern; slashes at either end are not significant.
func ParsePath(pattern string) Path {
	p := Path{pattern: pattern}
	if t := strings.Trim(pattern, "/"); t != "" {
		p.segments = strings.Split(t, "/")
	}
	return p
}

// String is the pattern as given.
func (p Path) String() string { return p.pattern }

// Match reports whether path falls under the pattern. It does not allocate.
func (p Path) Match(path string) bool {
	rest := strings.TrimPrefix(path, "/")
	for _, seg := range p.segments {
		if seg == "*" {
			return true
		}
		if rest == "" {
			return false
		}
		cur, tail, _ := strings.Cut(rest, "/")
		if seg[0] != ':' && seg != cur {
			return false
		}
		rest = tail
	}
	return true
}

// Routes are patterns of which a path takes the most specific that matches.
type Routes []Path

// NewRoutes compiles patterns.
func NewRoutes(patterns []string) Routes {
	r := make(Routes, len(patterns))
	for i, p := range patterns {
		r[i] = ParsePath(p)
	}
	return r
}

// Of is the pattern of the most specific route that path matches (the one
// with the most segments; on a tie, the first given), or def when none does.
func (r Routes) Of(path, def string) string {
	best, n := def, -1
	for _, p := range r {
		if len(p.segments) > n && p.Match(path) {
			best, n = p.pattern, len(p.segments)
		}
	}
	return best
}
