package zktest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// ClientAuth is what a TLS client port asks of clients' certificates
// (ZooKeeper's ssl.clientAuth).
type ClientAuth string

// The client authentication modes of ZooKeeper's ssl.clientAuth.
const (
	// ClientAuthNone asks clients for no certificate.
	ClientAuthNone ClientAuth = "none"
	// ClientAuthWant asks for a certificate and checks one that is
	// presented, but accepts a client without one.
	ClientAuthWant ClientAuth = "want"
	// ClientAuthNeed refuses a client without a certificate the server
	// trusts.
	ClientAuthNeed ClientAuth = "need"
)

// Subjects of the certificates made by NewTLSCerts, as ZooKeeper's x509
// authentication provider names a client (its certificate's subject, RFC
// 2253).
const (
	ClientSubject    = "CN=zktest-client"
	UntrustedSubject = "CN=zktest-untrusted"
)

// TLSCerts is certificate material made at test time for a server with a
// TLS client port and its clients: a CA, a server certificate for
// 127.0.0.1 and localhost signed by it, a client certificate signed by it,
// and an untrusted client certificate signed by another CA. Every file is
// PEM; keys are unencrypted PKCS #8 (ECDSA P-256).
type TLSCerts struct {
	// Dir holds the files below.
	Dir string
	// CAFile is the CA certificate: the server's and clients' trust store.
	CAFile string
	// ServerKeyStore is the server's key and certificate in one file (its
	// ssl.keyStore.location, type PEM).
	ServerKeyStore string
	// ClientCertFile and ClientKeyFile are the trusted client certificate
	// (subject ClientSubject) and its key.
	ClientCertFile, ClientKeyFile string
	// UntrustedCertFile and UntrustedKeyFile are a client certificate
	// (subject UntrustedSubject) of a CA the server does not trust, and its
	// key.
	UntrustedCertFile, UntrustedKeyFile string

	roots     *x509.CertPool
	client    tls.Certificate
	untrusted tls.Certificate
}

// NewTLSCerts makes the certificate material in dir (which must exist).
// The certificates are valid from an hour ago for a day.
func NewTLSCerts(dir string) (*TLSCerts, error) {
	ca, err := newCA("zktest CA")
	if err != nil {
		return nil, err
	}
	other, err := newCA("zktest untrusted CA")
	if err != nil {
		return nil, err
	}
	c := &TLSCerts{
		Dir:               dir,
		CAFile:            filepath.Join(dir, "ca.pem"),
		ServerKeyStore:    filepath.Join(dir, "server.pem"),
		ClientCertFile:    filepath.Join(dir, "client.pem"),
		ClientKeyFile:     filepath.Join(dir, "client-key.pem"),
		UntrustedCertFile: filepath.Join(dir, "untrusted.pem"),
		UntrustedKeyFile:  filepath.Join(dir, "untrusted-key.pem"),
		roots:             x509.NewCertPool(),
	}
	c.roots.AddCert(ca.cert)
	if err := writePEM(c.CAFile, pemCert(ca.der)); err != nil {
		return nil, err
	}
	server, err := ca.issue("zktest-server", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	if err := writePEM(c.ServerKeyStore, server.keyPEM, pemCert(server.der), pemCert(ca.der)); err != nil {
		return nil, err
	}
	for _, k := range []struct {
		ca          *certKey
		cn          string
		certF, keyF string
		into        *tls.Certificate
	}{
		{ca, "zktest-client", c.ClientCertFile, c.ClientKeyFile, &c.client},
		{other, "zktest-untrusted", c.UntrustedCertFile, c.UntrustedKeyFile, &c.untrusted},
	} {
		ck, err := k.ca.issue(k.cn, x509.ExtKeyUsageClientAuth)
		if err != nil {
			return nil, err
		}
		if err := writePEM(k.certF, pemCert(ck.der)); err != nil {
			return nil, err
		}
		if err := writePEM(k.keyF, ck.keyPEM); err != nil {
			return nil, err
		}
		*k.into = tls.Certificate{Certificate: [][]byte{ck.der}, PrivateKey: ck.key, Leaf: ck.cert}
	}
	return c, nil
}

// TLSCertsFor is NewTLSCerts in a directory of the test's, failing the test
// on error.
func TLSCertsFor(tb testing.TB) *TLSCerts {
	tb.Helper()
	c, err := NewTLSCerts(tb.TempDir())
	if err != nil {
		tb.Fatalf("zktest: making TLS certificates: %v", err)
	}
	return c
}

// ClientConfig returns a client configuration that trusts the CA and
// presents the trusted client certificate.
func (c *TLSCerts) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.roots, Certificates: []tls.Certificate{c.client}, MinVersion: tls.VersionTLS12}
}

// ClientConfigNoCert returns a client configuration that trusts the CA and
// presents no certificate.
func (c *TLSCerts) ClientConfigNoCert() *tls.Config {
	return &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
}

// UntrustedClientConfig returns a client configuration that trusts the CA
// and presents the certificate of the CA the server does not trust.
func (c *TLSCerts) UntrustedClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.roots, Certificates: []tls.Certificate{c.untrusted}, MinVersion: tls.VersionTLS12}
}

// WithTLS gives a server started by Start or StartProcess a TLS client port
// (ZooKeeper's secureClientPort, served by Netty) besides its plain one,
// with certs's server certificate and CA, asking clients for certificates
// as auth says. The x509 authentication provider is registered, so a
// session authenticated by a client certificate passes x509 ACLs naming
// its subject (ClientSubject). Server.TLSAddr returns the port's address.
// StartEnsemble refuses the option.
func WithTLS(certs *TLSCerts, auth ClientAuth) Option {
	return func(c *config) { c.tls, c.clientAuth = certs, auth }
}

// tlsConfigLines are the zoo.cfg lines of a TLS client port.
func (s *Server) tlsConfigLines() []string {
	if s.cfg.tls == nil {
		return nil
	}
	t := s.cfg.tls
	return []string{
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"secureClientPort=" + strconv.Itoa(s.tlsPort),
		"secureClientPortAddress=127.0.0.1",
		"ssl.keyStore.location=" + t.ServerKeyStore,
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + t.CAFile,
		"ssl.trustStore.type=PEM",
		"ssl.clientAuth=" + string(s.cfg.clientAuth),
		"authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
	}
}

// TLSAddr returns the address of the TLS client port, "127.0.0.1:port",
// or "" when the server was started without WithTLS.
func (s *Server) TLSAddr() string {
	if s.tlsPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort))
}

// TLSServers returns TLSAddr as a client's server list (nil without
// WithTLS).
func (s *Server) TLSServers() []string {
	if a := s.TLSAddr(); a != "" {
		return []string{a}
	}
	return nil
}

// tlsReady reports whether the TLS client port completes a handshake. The
// server opens the port after the plain one, and the first handshake it
// serves sets up its TLS machinery, which on a loaded machine takes longer
// than a client's connect timeout: TestLiveCommandsTLS failed so (the
// CLI's 5 s ran out; the server's log showed that first handshake end 5 s
// after the port was bound). A server with a TLS port is ready once it
// has served one handshake; each try waits up to tlsFirstHandshake.
func (s *Server) tlsReady() bool {
	if s.tlsPort == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), tlsFirstHandshake)
	defer cancel()
	d := tls.Dialer{Config: s.cfg.tls.ClientConfig()}
	c, err := d.DialContext(ctx, "tcp", s.TLSAddr())
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// tlsFirstHandshake bounds one try of tlsReady.
const tlsFirstHandshake = 30 * time.Second

func checkTLSConfig(c config) error {
	if c.tls == nil {
		return nil
	}
	switch c.clientAuth {
	case ClientAuthNone, ClientAuthWant, ClientAuthNeed:
		return nil
	}
	return fmt.Errorf("zktest: WithTLS: client auth %q is not one of none, want, need", c.clientAuth)
}

// certKey is a certificate and its key.
type certKey struct {
	cert   *x509.Certificate
	der    []byte
	key    *ecdsa.PrivateKey
	keyPEM []byte
}

func newCA(cn string) (*certKey, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return makeCert(tmpl, nil)
}

// issue makes a certificate for 127.0.0.1 and localhost signed by ca.
func (ca *certKey) issue(cn string, usage x509.ExtKeyUsage) (*certKey, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	return makeCert(tmpl, ca)
}

// makeCert signs tmpl with parent's key, or its own when parent is nil.
func makeCert(tmpl *x509.Certificate, parent *certKey) (*certKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("zktest: making certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &certKey{cert: cert, der: der, key: key, keyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})}, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writePEM(path string, blocks ...[]byte) error {
	var all []byte
	for _, b := range blocks {
		all = append(all, b...)
	}
	if len(all) == 0 {
		return errors.New("zktest: nothing to write to " + path)
	}
	return os.WriteFile(path, all, 0o600)
}
