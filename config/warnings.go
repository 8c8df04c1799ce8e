package config

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/throttledhq/throttled/admin"
)

// shortTokenMsg warns of an admin token shorter than admin.MinTokenLen. The
// admin API logs such tokens itself when it starts, so serve does not log
// this warning again.
const shortTokenMsg = "shorter than 16 bytes: guessable; use a long random token outside a demo"

// minTokenBits is the least estimated entropy of an admin token (its
// length times the entropy of its own characters) that is not warned of.
const minTokenBits = 48

// warnings are what works but is likely a mistake: no rules, no upstream,
// a dry run left on, weak admin tokens (in the file, or THROTTLED_ADMIN_TOKEN_* in environ).
func (c *Config) warnings(environ []string) []fieldErr {
	var out []fieldErr
	if len(c.Rules) == 0 {
		out = append(out, fieldErr{"rules", "no rules: no request is rate limited"})
	}
	if c.Upstream == "" {
		out = append(out, fieldErr{"upstream", "not set: no proxy runs (admin API, controller and /metrics only)"})
	}
	switch {
	case c.DryRun:
		out = append(out, fieldErr{"dry_run", "on: nothing is refused for quota or load (counted dry_run_*)"})
	case c.Controller.DryRun:
		out = append(out, fieldErr{"controller.dry_run", "on: nothing is shed for load (counted dry_run_*); quotas still refuse"})
	}
	if w := c.implicitDefaultTier(); w != "" {
		out = append(out, fieldErr{"default_tier", w})
	}
	for _, role := range slices.Sorted(maps.Keys(c.Admin.Tokens)) {
		if msg := weakToken(c.Admin.Tokens[role]); msg != "" {
			out = append(out, fieldErr{"admin.tokens." + role, msg})
		}
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if _, tok, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(k, admin.EnvTokenPrefix) {
			if msg := weakToken(tok); msg != "" {
				out = append(out, fieldErr{k, msg})
			}
		}
	}
	return out
}

// implicitDefaultTier warns when default_tier is not named among two tiers
// or more (with one, the admin API warns when a write adds another): its clients
// (and the anonymous ones, unless anonymous_tier is named) take the
// lowest-priority tier, so a tier added later with a lower priority takes
// them all over, silently.
func (c *Config) implicitDefaultTier() string {
	if c.DefaultTier != "" || len(c.Tiers) < 2 {
		return ""
	}
	pc := c.Policy()
	lowest, _ := pc.EffectiveTiers()
	who := "clients without an assignment and anonymous ones"
	if c.AnonymousTier != "" {
		who = "clients without an assignment"
	}
	return fmt.Sprintf("not set: %s take the lowest-priority tier, now %q; a tier added with a lower priority would take them all: name it", who, lowest)
}

// weakToken says why tok is guessable, or "".
func weakToken(tok string) string {
	switch {
	case tok == "":
		return "" // an error, reported by validate
	case len(tok) < admin.MinTokenLen:
		return shortTokenMsg
	case repeats(tok) || tokenBits(tok) < minTokenBits:
		return "low entropy (repeated or few distinct characters): guessable; use a long random token"
	}
	return ""
}

// tokenBits estimates the entropy of tok: its length times the Shannon
// entropy of its characters.
func tokenBits(tok string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range tok {
		counts[r]++
		n++
	}
	h := 0.0
	for _, k := range counts {
		p := float64(k) / float64(n)
		h -= p * math.Log2(p)
	}
	return h * float64(n)
}

// repeats reports whether tok is a shorter string repeated.
func repeats(tok string) bool {
	for n := 1; n <= len(tok)/2; n++ {
		if len(tok)%n == 0 && strings.Repeat(tok[:n], len(tok)/n) == tok {
			return true
		}
	}
	return false
}

// logWarnings logs each warning of the configuration once, when serve
// starts (short admin tokens are the admin API's to log).
func LogWarnings(log *slog.Logger, warnings Report) {
	for _, w := range warnings {
		if w.msg != shortTokenMsg {
			log.Warn("config: "+w.String(), "path", w.path)
		}
	}
}
