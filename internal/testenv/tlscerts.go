package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are PEM files of a certificate authority made for one test and
// of a server and a client certificate it signed.
type TLSFiles struct {
	CA         string // the CA's certificate
	ServerCert string // for 127.0.0.1 and the name ServerName
	ServerKey  string
	ClientCert string
	ClientKey  string
}

// ServerName is the DNS name in the server certificate of WriteTLSFiles
// (besides the IP address 127.0.0.1).
const ServerName = "redis.test"

// WriteTLSFiles makes a CA, a server and a client certificate (ECDSA P-256,
// valid for a day) and writes them to a temporary directory.
func WriteTLSFiles(tb testing.TB) TLSFiles {
	tb.Helper()
	dir := tb.TempDir()
	caKey, ca := newCert(tb, &x509.Certificate{Subject: pkix.Name{CommonName: "throttled test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	f := TLSFiles{CA: filepath.Join(dir, "ca.pem")}
	writePEM(tb, f.CA, "CERTIFICATE", ca.Raw)
	for _, c := range []struct {
		name      string
		usage     x509.ExtKeyUsage
		cert, key *string
	}{
		{"server", x509.ExtKeyUsageServerAuth, &f.ServerCert, &f.ServerKey},
		{"client", x509.ExtKeyUsageClientAuth, &f.ClientCert, &f.ClientKey},
	} {
		key, cert := newCert(tb, &x509.Certificate{Subject: pkix.Name{CommonName: c.name}, DNSNames: []string{ServerName},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{c.usage}}, ca, caKey)
		*c.cert, *c.key = filepath.Join(dir, c.name+".pem"), filepath.Join(dir, c.name+"-key.pem")
		writePEM(tb, *c.cert, "CERTIFICATE", cert.Raw)
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			tb.Fatalf("testenv: %s key: %v", c.name, err)
		}
		writePEM(tb, *c.key, "EC PRIVATE KEY", der)
	}
	return f
}

// newCert makes a key and a certificate from tmpl signed by parent (nil:
// self-signed).
func newCert(tb testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testenv: key: %v", err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatalf("testenv: serial: %v", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatalf("testenv: certificate %s: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testenv: certificate %s: %v", tmpl.Subject.CommonName, err)
	}
	return key, cert
}

func writePEM(tb testing.TB, path, typ string, der []byte) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}
