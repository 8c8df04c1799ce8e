package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

const minimalTiers = "tiers:\n  free: { rate: 5, period: 1m }\n"

// TestAdminListenOffLoopback: the admin listener binds off loopback only
// with TLS or admin.allow_public.
func TestAdminListenOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		admin string
		err   string // "" = valid
	}{
		{"listen: 127.0.0.1:9090", ""},
		{"listen: localhost:9090", ""},
		{"listen: '[::1]:9090'", ""},
		{"listen: 0.0.0.0:9090", "admin.listen: 0.0.0.0:9090 is not a loopback address"},
		{"listen: ':9090'", "admin.listen: :9090 is not a loopback address"},
		{"listen: 10.1.2.3:9090", "is not a loopback address"},
		{"listen: 0.0.0.0:9090\n  allow_public: true", ""},
		{"listen: 0.0.0.0:9090\n  tls: { cert_file: c.pem, key_file: k.pem }", ""},
		{"listen: 127.0.0.1:9090\n  tls: { cert_file: c.pem }", "admin.tls: set both cert_file and key_file"},
	} {
		_, err := config.Parse([]byte(minimalTiers+"admin:\n  "+tc.admin+"\n"), nil)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("admin: %q: %v, want %q", tc.admin, err, tc.err)
		}
	}
	if _, err := config.Parse([]byte(minimalTiers+"admin: { listen: '0.0.0.0:9090' }\n"), []string{"THROTTLED_ADMIN_ALLOW_PUBLIC=true"}); err != nil {
		t.Errorf("THROTTLED_ADMIN_ALLOW_PUBLIC=true: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key to dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "throttled test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for f, b := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kb}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestAdminTLS: with admin.tls the admin listener speaks HTTPS only.
func TestAdminTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	cfg := configtest.Serve(t, "", "")
	cfg.Admin.TLS = config.TLSConfig{CertFile: certFile, KeyFile: keyFile}
	addrs := startServe(t, cfg)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + addrs["admin"] + "/healthz")
	if err != nil {
		t.Fatalf("GET https://…/healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET https://…/healthz: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + addrs["admin"] + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain http on the TLS admin listener answered 200")
		}
	}
}

func TestAdminTLSBadFiles(t *testing.T) {
	cfg := configtest.Serve(t, "", "")
	cfg.Admin.TLS = config.TLSConfig{CertFile: "/nonexistent/cert.pem", KeyFile: "/nonexistent/key.pem"}
	err := runServe(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err == nil || !strings.Contains(err.Error(), "admin.tls") {
		t.Fatalf("serve with missing TLS files: %v, want an admin.tls error", err)
	}
}

// TestPprofOffByDefault: /debug/pprof/ is served only with admin.pprof.
func TestPprofOffByDefault(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := configtest.Serve(t, "", "")
		cfg.Admin.Pprof = on
		addrs := startServe(t, cfg)
		resp, _ := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/debug/pprof/", "")
		if want := map[bool]int{false: 404, true: 200}[on]; resp.StatusCode != want {
			t.Errorf("admin.pprof %v: /debug/pprof/ %d, want %d", on, resp.StatusCode, want)
		}
	}
}

// TestRequestSizeLimits: oversized headers get 431 on both listeners, an
// oversized admin body 400, and neither reaches a handler.
func TestRequestSizeLimits(t *testing.T) {
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, ""))
	big := strings.Repeat("x", maxHeaderBytes+4096+1) // net/http reads 4 KiB beyond the limit
	for _, url := range []string{"http://" + addrs["admin"] + "/healthz", "http://" + addrs["proxy"] + "/"} {
		if resp, _ := testenv.Call(t, "GET", url, "", "X-Big", big); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("GET %s with a %d-byte header: %d, want 431", url, len(big), resp.StatusCode)
		}
	}
	body := `{"name":"gold","rate":1,"period":"1s","x":"` + strings.Repeat("x", 2<<20) + `"}`
	resp, msg := testenv.Call(t, "POST", "http://"+addrs["admin"]+"/v1/tiers", body,
		"Authorization", "Bearer "+testenv.WriteToken, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "body: larger than") {
		t.Errorf("admin POST with a 2 MiB body: %d %s, want 413 naming the body", resp.StatusCode, msg)
	}
}

// TestSecretsNeverLogged: at debug level, through admin calls with good and
// bad tokens, JWT requests and a Redis outage, the log never shows an admin
// token, the JWT secret, a presented bearer token or the Redis password.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		redisPass = "redis-pass-5ecret-0123"
		jwtSecret = "jwt-5ecret-0123456789abcdef-0123456789"
		badToken  = "wrong-token-5ecret-0123456"
	)
	r := testenv.StartRedis(t)
	if err := r.Client().ConfigSet(context.Background(), "requirepass", redisPass).Err(); err != nil {
		t.Fatal(err)
	}
	up := testenv.Upstream(t)
	cfg := configtest.Serve(t, up.URL, fmt.Sprintf("redis://:%s@%s/0", redisPass, r.Addr()))
	cfg.Identity.JWT.Secret = jwtSecret
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	redis.SetLogger(redisLog{log})
	t.Cleanup(func() { redis.SetLogger(discardRedisLog{}) })
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan map[string]string, 1)
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, log, started) }()
	var addrs map[string]string
	select {
	case addrs = <-started:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start in 20s\n%s", logs.String())
	}
	admin, proxy := "http://"+addrs["admin"], "http://"+addrs["proxy"]
	testenv.Call(t, "GET", admin+"/v1/tiers", "", "Authorization", "Bearer "+testenv.WriteToken)
	testenv.Call(t, "GET", admin+"/v1/tiers", "", "Authorization", "Bearer "+badToken)
	testenv.Call(t, "POST", admin+"/v1/tiers", `{"name":`, "Authorization", "Bearer "+testenv.WriteToken)
	testenv.Call(t, "GET", proxy+"/", "", "Authorization", "Bearer "+badToken)
	testenv.Call(t, "GET", proxy+"/", "", "X-API-Key", badToken)
	r.Kill()
	for i := 0; i < 5; i++ {
		testenv.Call(t, "GET", proxy+"/", "", "X-API-Key", "k")
		testenv.Call(t, "GET", admin+"/readyz", "")
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	out := logs.String()
	if !strings.Contains(out, "throttled serving") {
		t.Fatalf("no log captured:\n%s", out)
	}
	for name, secret := range map[string]string{"admin token": testenv.WriteToken, "redis password": redisPass,
		"jwt secret": jwtSecret, "presented token": badToken} {
		if strings.Contains(out, secret) {
			t.Errorf("the %s appears in the log:\n%s", name, testenv.GrepLines(out, secret))
		}
	}
}

// discardRedisLog silences go-redis after TestSecretsNeverLogged.
type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}
