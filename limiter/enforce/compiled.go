package enforce

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
)

// compiled is a validated Policy prepared for the hot path. It is never
// changed after it is made: a new policy makes a new compiled.
type compiled struct {
	rules     []compiledRule
	tiers     map[string]*Tier
	def, anon *Tier
}

type compiledRule struct {
	Rule
	path    Path
	methods map[string]bool
	keys    []keySource
	own     *limiter.Rule // the rule's own quota, or nil: the tier's
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
	if p.DefaultTier != "" {
		c.def = c.tiers[p.DefaultTier]
	}
	c.anon = c.def
	if p.AnonymousTier != "" {
		c.anon = c.tiers[p.AnonymousTier]
	}
	for _, r := range p.Rules {
		cr := compiledRule{Rule: r, path: ParsePath(r.Path)}
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
		}
		if r.Limit != 0 {
			cr.own = &limiter.Rule{Name: r.Name, Algorithm: r.Algorithm, Limit: r.Limit, Period: r.Period, Burst: r.Burst, Fallback: r.Fallback}
		}
		c.rules = append(c.rules, cr)
	}
	return c, nil
}

// matches reports whether the rule applies to method and path. It does not
// allocate.
func (r *compiledRule) matches(method, path string) bool {
	if r.methods != nil && !r.methods[method] {
		return false
	}
	return r.path.Match(path)
}

// rule is the limit the rule applies to a client of tier t.
func (r *compiledRule) rule(t *Tier) limiter.Rule {
	if r.own != nil {
		return *r.own
	}
	return limiter.Rule{Name: r.Name, Algorithm: t.Algorithm, Limit: t.Limit, Period: t.Period, Burst: t.Burst, Fallback: r.Fallback}
}

// maxKeyLen bounds bucket keys: longer keys are replaced by their SHA-256,
// so a client cannot make the store hold huge keys.
const maxKeyLen = 128

// key builds the bucket key "<rule>[|<tier>]|<value>[|<value>…]", or
// reports that a key source is absent from the request. A rule that spends
// its client's tier quota keys by tier too: clients of two tiers behind one
// IP must not share a bucket whose capacity depends on who asked last.
func (r *compiledRule) key(id *identity.Client, req *http.Request, t *Tier) (string, bool) {
	var b strings.Builder
	b.Grow(len(r.Name) + len(t.Name) + 48)
	r.keyPrefix(&b, t)
	for _, k := range r.keys {
		v := k.value(id, req, r)
		if v == "" {
			return "", false
		}
		b.WriteByte('|')
		b.WriteString(v)
	}
	return bounded(b.String(), r.Name), true
}

// keyOf is the bucket key of one key value: the key that key makes for a
// rule whose key sources give value ("a|b" for two).
func (r *compiledRule) keyOf(t *Tier, value string) string {
	var b strings.Builder
	b.Grow(len(r.Name) + len(t.Name) + len(value) + 2)
	r.keyPrefix(&b, t)
	b.WriteByte('|')
	b.WriteString(value)
	return bounded(b.String(), r.Name)
}

func (r *compiledRule) keyPrefix(b *strings.Builder, t *Tier) {
	b.WriteString(r.Name)
	if r.own == nil {
		b.WriteByte('|')
		b.WriteString(t.Name)
	}
}

// bounded replaces a key longer than maxKeyLen by the rule name and the
// key's SHA-256.
func bounded(key, rule string) string {
	if len(key) <= maxKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return rule + "|sha256:" + hex.EncodeToString(sum[:])
}

func (k *keySource) value(id *identity.Client, req *http.Request, r *compiledRule) string {
	switch k.kind {
	case "ip":
		return id.IP
	case "api_key":
		return id.APIKey
	case "jwt":
		return id.Subject
	case "client":
		return id.Key()
	case "route":
		return r.Path
	case "header":
		return req.Header.Get(k.header)
	}
	return ""
}

// tier finds the tier of an identity.
func (c *compiled) tier(id *identity.Client, lookup TierLookup) *Tier {
	client := id.Key()
	if client == "" {
		return c.anon
	}
	if lookup != nil {
		if name, ok := lookup.TierOf(client); ok {
			if t := c.tiers[name]; t != nil {
				return t
			}
		}
	}
	return c.def
}
