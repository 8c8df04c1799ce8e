package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// Role is what a token may do. The zero value is no role.
type Role uint8

// Roles: write implies read.
const (
	RoleRead Role = iota + 1
	RoleWrite
)

func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// ParseRole reads "read" or "write".
func ParseRole(s string) (Role, error) {
	switch s {
	case "read":
		return RoleRead, nil
	case "write":
		return RoleWrite, nil
	}
	return 0, fmt.Errorf("admin: role %q: want read or write", s)
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads "read" or "write" (JSON, YAML and flags).
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	*r = v
	return err
}

// Token is a bearer token and its role. The token's name (its key in
// Settings.Tokens) is who the audit log says made a change.
type Token struct {
	Token string `json:"token" yaml:"token"`
	Role  Role   `json:"role" yaml:"role"`
}

// MinTokenLen is the shortest token New accepts without a warning. Shorter
// tokens work (the quick start's "change-me" must), but New logs that they
// are guessable.
const MinTokenLen = 16

// weakTokens names the tokens shorter than MinTokenLen.
func weakTokens(tokens map[string]Token) []string {
	var weak []string
	for n, t := range tokens {
		if len(t.Token) < MinTokenLen {
			weak = append(weak, n)
		}
	}
	sort.Strings(weak)
	return weak
}

// EnvTokenPrefix starts the environment variables TokensFromEnv reads.
const EnvTokenPrefix = "THROTTLED_ADMIN_TOKEN_"

// TokensFromEnv reads tokens from environment entries ("KEY=value", as
// os.Environ returns) of the form THROTTLED_ADMIN_TOKEN_<NAME>=<role>:<token>;
// the name is lower-cased. Other entries are ignored.
func TokensFromEnv(environ []string) (map[string]Token, error) {
	out := map[string]Token{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		name, ok := strings.CutPrefix(k, EnvTokenPrefix)
		if !ok {
			continue
		}
		name = strings.ToLower(name)
		role, tok, ok := strings.Cut(v, ":")
		r, err := ParseRole(role)
		if !ok || err != nil {
			return nil, fmt.Errorf("admin: %s: want <read|write>:<token>", k)
		}
		out[name] = Token{Token: tok, Role: r}
	}
	return out, nil
}

// authenticator finds the token a request presents, comparing against
// every configured token in constant time.
type authenticator struct {
	names []string
	sums  [][sha256.Size]byte
	roles []Role
}

func newAuthenticator(tokens map[string]Token) (*authenticator, error) {
	if len(tokens) == 0 {
		return nil, errors.New("admin: Settings.Tokens: at least one token is needed")
	}
	a := &authenticator{}
	seen := map[string]string{}
	names := make([]string, 0, len(tokens))
	for n := range tokens {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := tokens[n]
		switch {
		case !policy.ValidName(n):
			return nil, fmt.Errorf("admin: Settings.Tokens: name %q: want 1-64 of [A-Za-z0-9_.-]", n)
		case t.Token == "":
			return nil, fmt.Errorf("admin: Settings.Tokens[%s]: empty token", n)
		case t.Role != RoleRead && t.Role != RoleWrite:
			return nil, fmt.Errorf("admin: Settings.Tokens[%s]: role %v: want read or write", n, t.Role)
		case seen[t.Token] != "":
			return nil, fmt.Errorf("admin: Settings.Tokens[%s]: same token as %s", n, seen[t.Token])
		}
		seen[t.Token] = n
		a.names = append(a.names, n)
		a.sums = append(a.sums, sha256.Sum256([]byte(t.Token)))
		a.roles = append(a.roles, t.Role)
	}
	return a, nil
}

// lookup returns the name and role of the token given. Hashing first makes
// every comparison the same length; every token is compared.
func (a *authenticator) lookup(given string) (string, Role, bool) {
	sum := sha256.Sum256([]byte(given))
	found := -1
	for i := range a.sums {
		if subtle.ConstantTimeCompare(sum[:], a.sums[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", 0, false
	}
	return a.names[found], a.roles[found], true
}

// ctxWho is the echo.Context key of the authenticated token's name.
const ctxWho = "admin.who"

// middleware answers 401 without a valid bearer token and 403 when a read
// token tries to write.
func (a *authenticator) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get("Authorization")
		scheme, tok, _ := strings.Cut(h, " ")
		if h == "" || !strings.EqualFold(scheme, "Bearer") {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="throttled"`)
			return httpErr(http.StatusUnauthorized, "", "missing bearer token")
		}
		name, role, ok := a.lookup(strings.TrimSpace(tok))
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="throttled", error="invalid_token"`)
			return httpErr(http.StatusUnauthorized, "", "invalid bearer token")
		}
		m := c.Request().Method
		if m != http.MethodGet && m != http.MethodHead && role < RoleWrite {
			return httpErr(http.StatusForbidden, "", fmt.Sprintf("token %s has role %v: %s needs write", name, role, m))
		}
		c.Set(ctxWho, name)
		return next(c)
	}
}
