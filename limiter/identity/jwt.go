package identity

import (
	"crypto/elliptic"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/throttledhq/throttled/internal/enum"
)

// JWT errors. Verify wraps one of them; Subject turns them all into
// "anonymous".
var (
	// ErrNoToken reports an Authorization header that holds no bearer token.
	ErrNoToken = errors.New("identity: no bearer token")
	// ErrBadToken reports a bearer token that failed verification.
	ErrBadToken = errors.New("identity: bad bearer token")
)

// JWTAlg is the one signing algorithm a JWTVerifier accepts.
type JWTAlg uint8

// JWT algorithms. JWTAuto infers the algorithm from the key: a Secret means
// HS256, an RSA public key RS256, a P-256 public key ES256.
const (
	JWTAuto JWTAlg = iota
	JWTHS256
	JWTRS256
	JWTES256
)

var jwtAlgNames = enum.New[JWTAlg]("identity", "jwt algorithm", "auto", "HS256", "RS256", "ES256")

func (a JWTAlg) String() string { return jwtAlgNames.String(a) }

// ParseJWTAlg reads an algorithm name as printed by String ("" means JWTAuto).
func ParseJWTAlg(s string) (JWTAlg, error) {
	if s == "" {
		return JWTAuto, nil
	}
	a, err := jwtAlgNames.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return a, nil
}

// MinHMACSecret is the shortest HS256 secret accepted: RFC 7518 §3.2 asks for
// a key at least as long as the hash output.
const MinHMACSecret = 32

// maxTokenLen bounds the work an unauthenticated client can ask for.
const maxTokenLen = 8 << 10

// JWTConfig says which bearer tokens to believe. Exactly one of Secret and
// PublicKeyPEM is set. Zero values of the other fields are the defaults.
type JWTConfig struct {
	// Alg is the only algorithm accepted; JWTAuto infers it from the key.
	Alg JWTAlg
	// Secret is the HS256 key, at least MinHMACSecret bytes.
	Secret []byte
	// PublicKeyPEM is an RSA (RS256, ≥ 2048 bits) or P-256 ECDSA (ES256)
	// public key in PEM: PKIX "PUBLIC KEY", PKCS #1 "RSA PUBLIC KEY", or a
	// certificate.
	PublicKeyPEM []byte
	// Issuer, when set, must equal the token's iss claim.
	Issuer string
	// Audience, when set, must be one of the token's aud values.
	Audience string
	// Leeway tolerates clock skew when checking exp and nbf (default 0;
	// keep it small, e.g. 30s).
	Leeway time.Duration
	// ExpiryOptional accepts tokens without an exp claim. By default a
	// token must expire.
	ExpiryOptional bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// JWTVerifier reads the subject of a verified bearer JWT. It is safe for
// concurrent use.
type JWTVerifier struct {
	alg    JWTAlg
	key    any
	parser *jwt.Parser
}

// NewJWTVerifier checks c and returns a verifier for it.
func NewJWTVerifier(c JWTConfig) (*JWTVerifier, error) {
	alg, key, err := c.key()
	if err != nil {
		return nil, err
	}
	if c.Leeway < 0 {
		return nil, fmt.Errorf("%w: jwt leeway %v is negative", ErrBadConfig, c.Leeway)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{alg.String()}),
		jwt.WithLeeway(c.Leeway),
		jwt.WithTimeFunc(c.Now),
		jwt.WithStrictDecoding(),
	}
	if !c.ExpiryOptional {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	if c.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(c.Issuer))
	}
	if c.Audience != "" {
		opts = append(opts, jwt.WithAudience(c.Audience))
	}
	return &JWTVerifier{alg: alg, key: key, parser: jwt.NewParser(opts...)}, nil
}

// key returns the algorithm and the verification key c describes.
func (c JWTConfig) key() (JWTAlg, any, error) {
	switch {
	case !jwtAlgNames.Valid(c.Alg):
		return 0, nil, fmt.Errorf("%w: jwt algorithm %v unknown", ErrBadConfig, c.Alg)
	case len(c.Secret) > 0 && len(c.PublicKeyPEM) > 0:
		return 0, nil, fmt.Errorf("%w: jwt: set secret or public key, not both", ErrBadConfig)
	case len(c.Secret) > 0:
		if c.Alg != JWTAuto && c.Alg != JWTHS256 {
			return 0, nil, fmt.Errorf("%w: jwt: a secret is for HS256, not %v", ErrBadConfig, c.Alg)
		}
		if len(c.Secret) < MinHMACSecret {
			return 0, nil, fmt.Errorf("%w: jwt secret has %d bytes, want at least %d",
				ErrBadConfig, len(c.Secret), MinHMACSecret)
		}
		return JWTHS256, c.Secret, nil
	case len(c.PublicKeyPEM) > 0:
		return c.publicKey()
	}
	return 0, nil, fmt.Errorf("%w: jwt: no secret and no public key", ErrBadConfig)
}

func (c JWTConfig) publicKey() (JWTAlg, any, error) {
	if c.Alg == JWTHS256 {
		return 0, nil, fmt.Errorf("%w: jwt: HS256 takes a secret, not a public key", ErrBadConfig)
	}
	if c.Alg != JWTES256 {
		if k, err := jwt.ParseRSAPublicKeyFromPEM(c.PublicKeyPEM); err == nil {
			if k.N.BitLen() < 2048 {
				return 0, nil, fmt.Errorf("%w: jwt RSA key has %d bits, want at least 2048", ErrBadConfig, k.N.BitLen())
			}
			return JWTRS256, k, nil
		}
	}
	if c.Alg != JWTRS256 {
		if k, err := jwt.ParseECPublicKeyFromPEM(c.PublicKeyPEM); err == nil {
			if k.Curve != elliptic.P256() {
				return 0, nil, fmt.Errorf("%w: jwt ECDSA key is on %s, ES256 needs P-256",
					ErrBadConfig, k.Curve.Params().Name)
			}
			return JWTES256, k, nil
		}
	}
	want := map[JWTAlg]string{JWTAuto: "an RSA or P-256 ECDSA", JWTRS256: "an RSA", JWTES256: "a P-256 ECDSA"}[c.Alg]
	return 0, nil, fmt.Errorf("%w: jwt public key PEM is not %s public key", ErrBadConfig, want)
}

// Alg returns the algorithm v accepts.
func (v *JWTVerifier) Alg() JWTAlg { return v.alg }

// Subject returns the sub claim of the bearer token in an Authorization
// header value ("Bearer <jwt>"), and whether the token verified. Any failure
// gives ("", false): the caller treats the request as anonymous.
func (v *JWTVerifier) Subject(authorization string) (string, bool) {
	sub, err := v.Verify(authorization)
	return sub, err == nil
}

// Verify is Subject with the reason for a failure: ErrNoToken when the
// header holds no bearer token, ErrBadToken (wrapping the cause) when the
// token does not verify or has no subject.
func (v *JWTVerifier) Verify(authorization string) (string, error) {
	tok, ok := bearer(authorization)
	if !ok {
		return "", ErrNoToken
	}
	if len(tok) > maxTokenLen {
		return "", fmt.Errorf("%w: token longer than %d bytes", ErrBadToken, maxTokenLen)
	}
	var claims jwt.RegisteredClaims
	_, err := v.parser.ParseWithClaims(tok, &claims, v.keyFor)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if claims.Subject == "" {
		return "", fmt.Errorf("%w: no sub claim", ErrBadToken)
	}
	return claims.Subject, nil
}

// keyFor returns the key, checking the algorithm once more: the parser
// already rejects other algorithms, this guards against a change there.
func (v *JWTVerifier) keyFor(t *jwt.Token) (any, error) {
	if t.Method == nil || t.Method.Alg() != v.alg.String() {
		return nil, fmt.Errorf("identity: jwt algorithm %v not accepted", t.Header["alg"])
	}
	return v.key, nil
}

// bearer extracts the token from "Bearer <token>" (scheme case-insensitive,
// RFC 7235).
func bearer(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	tok := strings.TrimLeft(h[len(scheme):], " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}
