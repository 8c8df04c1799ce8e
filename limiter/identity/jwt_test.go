package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var jwtT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// jwtKeys are generated once per test binary: RSA generation is slow.
var jwtKeys = sync.OnceValue(func() (k struct {
	rsa    *rsa.PrivateKey
	ec     *ecdsa.PrivateKey
	ec384  *ecdsa.PrivateKey
	secret []byte
}) {
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if k.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); err != nil {
		panic(err)
	}
	k.secret = []byte("0123456789abcdef0123456789abcdef-test-secret")
	return k
})

func pemPublic(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// sign makes a token with claims sub="alice", iss, aud, iat=t0, exp=t0+1h
// unless changed by edit.
func sign(t testing.TB, m jwt.SigningMethod, key any, edit func(jwt.MapClaims)) string {
	t.Helper()
	c := jwt.MapClaims{"sub": "alice", "iss": "issuer.test", "aud": "throttled",
		"iat": jwtT0.Unix(), "exp": jwtT0.Add(time.Hour).Unix()}
	if edit != nil {
		edit(c)
	}
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newVerifier(t testing.TB, c JWTConfig) *JWTVerifier {
	t.Helper()
	if c.Now == nil {
		c.Now = func() time.Time { return jwtT0 }
	}
	v, err := NewJWTVerifier(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJWTValid(t *testing.T) {
	k := jwtKeys()
	tests := []struct {
		name string
		cfg  JWTConfig
		want JWTAlg
		tok  string
	}{
		{"HS256", JWTConfig{Secret: k.secret}, JWTHS256, sign(t, jwt.SigningMethodHS256, k.secret, nil)},
		{"RS256", JWTConfig{PublicKeyPEM: pemPublic(t, &k.rsa.PublicKey)}, JWTRS256, sign(t, jwt.SigningMethodRS256, k.rsa, nil)},
		{"ES256", JWTConfig{PublicKeyPEM: pemPublic(t, &k.ec.PublicKey)}, JWTES256, sign(t, jwt.SigningMethodES256, k.ec, nil)},
		{"RS256 explicit", JWTConfig{Alg: JWTRS256, PublicKeyPEM: pemPublic(t, &k.rsa.PublicKey)}, JWTRS256,
			sign(t, jwt.SigningMethodRS256, k.rsa, nil)},
		{"issuer and audience", JWTConfig{Secret: k.secret, Issuer: "issuer.test", Audience: "throttled"}, JWTHS256,
			sign(t, jwt.SigningMethodHS256, k.secret, nil)},
		{"audience list", JWTConfig{Secret: k.secret, Audience: "throttled"}, JWTHS256,
			sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["aud"] = []string{"x", "throttled"} })},
		{"expired within leeway", JWTConfig{Secret: k.secret, Leeway: time.Minute}, JWTHS256,
			sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["exp"] = jwtT0.Add(-30 * time.Second).Unix() })},
		{"nbf within leeway", JWTConfig{Secret: k.secret, Leeway: time.Minute}, JWTHS256,
			sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["nbf"] = jwtT0.Add(30 * time.Second).Unix() })},
		{"no exp, optional", JWTConfig{Secret: k.secret, ExpiryOptional: true}, JWTHS256,
			sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { delete(c, "exp") })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, tt.cfg)
			if v.Alg() != tt.want {
				t.Errorf("Alg() = %v, want %v", v.Alg(), tt.want)
			}
			for _, h := range []string{"Bearer " + tt.tok, "bearer " + tt.tok, "BEARER  " + tt.tok} {
				if sub, ok := v.Subject(h); !ok || sub != "alice" {
					_, err := v.Verify(h)
					t.Errorf("Subject(%.20q…) = %q, %v (%v); want alice", h, sub, ok, err)
				}
			}
		})
	}
}

func TestJWTRejected(t *testing.T) {
	k := jwtKeys()
	rsaPEM := pemPublic(t, &k.rsa.PublicKey)
	hs := newVerifier(t, JWTConfig{Secret: k.secret, Issuer: "issuer.test", Audience: "throttled"})
	rs := newVerifier(t, JWTConfig{PublicKeyPEM: rsaPEM})
	es := newVerifier(t, JWTConfig{PublicKeyPEM: pemPublic(t, &k.ec.PublicKey)})
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := sign(t, jwt.SigningMethodHS256, k.secret, nil)
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil)
	at := func(d time.Duration) int64 { return jwtT0.Add(d).Unix() }
	tests := []struct {
		name string
		v    *JWTVerifier
		auth string
		want error
	}{
		{"forged HS256 signature", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("x", 32)), nil), ErrBadToken},
		{"tampered payload", hs, "Bearer " + tamper(t, good), ErrBadToken},
		{"forged RS256 signature", rs, "Bearer " + sign(t, jwt.SigningMethodRS256, otherRSA, nil), ErrBadToken},
		{"forged ES256 signature", es, "Bearer " + sign(t, jwt.SigningMethodES256, otherEC, nil), ErrBadToken},
		{"alg confusion: HS256 keyed with the RSA public key", rs, "Bearer " + sign(t, jwt.SigningMethodHS256, rsaPEM, nil), ErrBadToken},
		{"alg confusion: HS256 to an ES256 verifier", es, "Bearer " + sign(t, jwt.SigningMethodHS256, pemPublic(t, &k.ec.PublicKey), nil), ErrBadToken},
		{"other alg, same key: HS512", hs, "Bearer " + sign(t, jwt.SigningMethodHS512, k.secret, nil), ErrBadToken},
		{"other alg, same key: PS256", rs, "Bearer " + sign(t, jwt.SigningMethodPS256, k.rsa, nil), ErrBadToken},
		{"alg none to HS256", hs, "Bearer " + none, ErrBadToken},
		{"alg none to RS256", rs, "Bearer " + none, ErrBadToken},
		{"expired", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["exp"] = at(-time.Second) }), ErrBadToken},
		{"not yet valid", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["nbf"] = at(time.Second) }), ErrBadToken},
		{"no exp", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { delete(c, "exp") }), ErrBadToken},
		{"missing sub", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { delete(c, "sub") }), ErrBadToken},
		{"empty sub", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["sub"] = "" }), ErrBadToken},
		{"wrong issuer", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["iss"] = "evil" }), ErrBadToken},
		{"wrong audience", hs, "Bearer " + sign(t, jwt.SigningMethodHS256, k.secret, func(c jwt.MapClaims) { c["aud"] = "other" }), ErrBadToken},
		{"huge token", hs, "Bearer " + good + strings.Repeat("A", maxTokenLen), ErrBadToken},
		{"garbage token", hs, "Bearer not.a.jwt", ErrBadToken},
		{"empty", hs, "", ErrNoToken},
		{"scheme only", hs, "Bearer", ErrNoToken},
		{"scheme and space", hs, "Bearer ", ErrNoToken},
		{"basic", hs, "Basic YWxpY2U6c2VjcmV0", ErrNoToken},
		{"no scheme", hs, good, ErrNoToken},
		{"two tokens", hs, "Bearer " + good + " " + good, ErrNoToken},
		{"garbage", hs, "\x00\xff garbage", ErrNoToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if sub, ok := tt.v.Subject(tt.auth); ok || sub != "" {
				t.Errorf("Subject = %q, %v; want anonymous", sub, ok)
			}
			if _, err := tt.v.Verify(tt.auth); !errors.Is(err, tt.want) {
				t.Errorf("Verify error = %v, want %v", err, tt.want)
			}
		})
	}
	// The untampered token does verify: the rejections above are not a
	// verifier that rejects everything.
	if sub, ok := hs.Subject("Bearer " + good); !ok || sub != "alice" {
		t.Fatalf("good token rejected")
	}
}

// tamper changes the payload's sub to "admin", keeping the signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	p := strings.Split(tok, ".")
	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil {
		t.Fatal(err)
	}
	c["sub"] = "admin"
	forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SigningString()
	if err != nil {
		t.Fatal(err)
	}
	return forged + "." + p[2]
}

func TestJWTConfig(t *testing.T) {
	k := jwtKeys()
	rsaPEM := pemPublic(t, &k.rsa.PublicKey)
	ecPEM := pemPublic(t, &k.ec.PublicKey)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	privDER, _ := x509.MarshalECPrivateKey(k.ec)
	tests := []struct {
		name string
		cfg  JWTConfig
		want string
	}{
		{"nothing", JWTConfig{}, "no secret and no public key"},
		{"both", JWTConfig{Secret: k.secret, PublicKeyPEM: rsaPEM}, "not both"},
		{"short secret", JWTConfig{Secret: []byte("short")}, "5 bytes"},
		{"secret for RS256", JWTConfig{Alg: JWTRS256, Secret: k.secret}, "secret is for HS256"},
		{"PEM for HS256", JWTConfig{Alg: JWTHS256, PublicKeyPEM: rsaPEM}, "HS256 takes a secret"},
		{"RSA key for ES256", JWTConfig{Alg: JWTES256, PublicKeyPEM: rsaPEM}, "not a P-256 ECDSA public key"},
		{"EC key for RS256", JWTConfig{Alg: JWTRS256, PublicKeyPEM: ecPEM}, "not an RSA public key"},
		{"P-384 key", JWTConfig{PublicKeyPEM: pemPublic(t, &k.ec384.PublicKey)}, "ES256 needs P-256"},
		{"small RSA key", JWTConfig{PublicKeyPEM: pemPublic(t, &small.PublicKey)}, "1024 bits"},
		{"not PEM", JWTConfig{PublicKeyPEM: []byte("hello")}, "not an RSA or P-256 ECDSA public key"},
		{"private key PEM", JWTConfig{PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: privDER})}, "public key"},
		{"unknown alg", JWTConfig{Alg: 9, Secret: k.secret}, "JWTAlg(9) unknown"},
		{"negative leeway", JWTConfig{Secret: k.secret, Leeway: -time.Second}, "leeway"},
	}
	for _, tt := range tests {
		_, err := NewJWTVerifier(tt.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want ErrBadConfig containing %q", tt.name, err, tt.want)
		}
	}
}

func TestJWTAlgString(t *testing.T) {
	for _, a := range []JWTAlg{JWTAuto, JWTHS256, JWTRS256, JWTES256} {
		got, err := ParseJWTAlg(a.String())
		if err != nil || got != a {
			t.Errorf("ParseJWTAlg(%q) = %v, %v", a.String(), got, err)
		}
	}
	if a, err := ParseJWTAlg(""); err != nil || a != JWTAuto {
		t.Errorf("ParseJWTAlg(\"\") = %v, %v", a, err)
	}
	if _, err := ParseJWTAlg("none"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("ParseJWTAlg(none) error = %v", err)
	}
}

func BenchmarkJWTSubjectHS256(b *testing.B) {
	k := jwtKeys()
	v := newVerifier(b, JWTConfig{Secret: k.secret})
	h := "Bearer " + sign(b, jwt.SigningMethodHS256, k.secret, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := v.Subject(h); !ok {
			b.Fatal("rejected")
		}
	}
}
