package zktest_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// handshake dials addr with cfg and completes a TLS handshake, then reads
// until the server answers or closes: a server that refuses the client's
// certificate says so after the handshake (TLS 1.3).
func handshake(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer raw.Close()
	if err := raw.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		return err
	}
	// A ZooKeeper ConnectRequest: the server answers a client it accepted.
	req := []byte{0, 0, 0, 44, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x27, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [4]byte
	_, err = io.ReadFull(c, hdr[:])
	return err
}

func TestTLSPortClientAuth(t *testing.T) {
	certs := zktest.TLSCertsFor(t)
	for _, c := range []struct {
		auth         zktest.ClientAuth
		noCert       bool // a client without a certificate is accepted
		untrusted    bool // a client with an untrusted certificate is accepted
		trustedIdent bool // the trusted client's session has its subject as x509 identity
	}{
		{zktest.ClientAuthNeed, false, false, true},
		// Observed (ZooKeeper 3.8, OpenJDK 17): a wanted certificate that
		// does not verify is dropped, and the client goes on without an
		// identity, as one without a certificate.
		{zktest.ClientAuthWant, true, true, true},
		{zktest.ClientAuthNone, true, true, false}, // no certificate is asked for
	} {
		t.Run(string(c.auth), func(t *testing.T) {
			s := zktest.Start(t, zktest.WithTLS(certs, c.auth))
			s.RequireLocal(t)
			if !strings.HasPrefix(s.TLSAddr(), "127.0.0.1:") || s.TLSAddr() == s.Addr() {
				t.Fatalf("TLSAddr() = %q, Addr() = %q", s.TLSAddr(), s.Addr())
			}
			if err := handshake(t, s.TLSAddr(), certs.ClientConfig()); err != nil {
				t.Fatalf("trusted client: %v", err)
			}
			if err := handshake(t, s.TLSAddr(), certs.ClientConfigNoCert()); (err == nil) != c.noCert {
				t.Fatalf("client without a certificate: %v; want accepted = %v", err, c.noCert)
			}
			if err := handshake(t, s.TLSAddr(), certs.UntrustedClientConfig()); (err == nil) != c.untrusted {
				t.Fatalf("untrusted client: %v; want accepted = %v", err, c.untrusted)
			}
			// A node only the two subjects may read, made on the plain port
			// (which still serves four-letter words).
			if out, err := zktest.FourLetter(s.Addr(), "ruok", 5*time.Second); err != nil || out != "imok" {
				t.Fatalf("ruok on the plain port = %q, %v", out, err)
			}
			plain := connect(t, s.Servers(), 5*time.Second)
			node := uniquePath(t)
			acl := []zk.ACL{{Perms: zk.PermRead, Scheme: "x509", ID: zktest.ClientSubject}, {Perms: zk.PermRead, Scheme: "x509", ID: zktest.UntrustedSubject}}
			if _, err := plain.Create(node, []byte("x"), 0, acl); err != nil {
				t.Fatal(err)
			}
			if _, _, err := plain.Get(node); !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("plain read = %v, want no auth", err)
			}
			if _, _, err := tlsConnect(t, s.TLSAddr(), certs.ClientConfig()).Get(node); (err == nil) != c.trustedIdent {
				t.Fatalf("trusted client's read = %v; want it allowed = %v", err, c.trustedIdent)
			}
			if c.untrusted {
				if _, _, err := tlsConnect(t, s.TLSAddr(), certs.UntrustedClientConfig()).Get(node); !errors.Is(err, zk.ErrNoAuth) {
					t.Fatalf("untrusted client's read = %v; want no auth (no identity)", err)
				}
			}
		})
	}
}

// tlsConnect opens a go-zookeeper session over TLS to addr and waits for
// it.
func tlsConnect(t *testing.T, addr string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	dial := func(network, a string, timeout time.Duration) (net.Conn, error) {
		raw, err := net.DialTimeout(network, a, timeout)
		if err != nil {
			return nil, err
		}
		c := tls.Client(raw, cfg)
		if err := c.Handshake(); err != nil {
			raw.Close()
			return nil, err
		}
		return c, nil
	}
	events := make(chan zk.Event, 16)
	c, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithDialer(dial), zk.WithLogInfo(false),
		zk.WithEventCallback(func(e zk.Event) {
			if e.State == zk.StateHasSession {
				select {
				case events <- e:
				default:
				}
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	select {
	case <-events:
	case <-time.After(30 * time.Second):
		t.Fatalf("no session over TLS to %s", addr)
	}
	return c
}

// WithTLS is checked before anything starts: a client authentication mode
// ZooKeeper does not know, or an ensemble, is refused.
func TestTLSOptionRefused(t *testing.T) {
	certs := zktest.TLSCertsFor(t)
	if s, err := zktest.StartProcess(zktest.WithTLS(certs, "required")); err == nil {
		s.Close()
		if !s.External() {
			t.Fatal("StartProcess accepted client auth \"required\"")
		}
	} else if !strings.Contains(err.Error(), "none, want, need") {
		t.Fatalf("error %q does not list the modes", err)
	}
	if e, err := zktest.StartEnsembleProcess(3, zktest.WithTLS(certs, zktest.ClientAuthNone)); err == nil {
		e.Close()
		t.Fatal("StartEnsembleProcess accepted WithTLS")
	}
}
