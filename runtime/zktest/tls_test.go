package zktest_test

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

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
	s := zktest.Start(t, zktest.WithTLS(certs, zktest.ClientAuthNeed))
	s.RequireLocal(t)
	if !strings.HasPrefix(s.TLSAddr(), "127.0.0.1:") || s.TLSAddr() == s.Addr() {
		t.Fatalf("TLSAddr() = %q, Addr() = %q", s.TLSAddr(), s.Addr())
	}
	if err := handshake(t, s.TLSAddr(), certs.ClientConfig()); err != nil {
		t.Fatalf("trusted client: %v", err)
	}
	if err := handshake(t, s.TLSAddr(), certs.UntrustedClientConfig()); err == nil {
		t.Fatal("untrusted client accepted")
	} else {
		t.Logf("untrusted client: %v", err)
	}
	if err := handshake(t, s.TLSAddr(), certs.ClientConfigNoCert()); err == nil {
		t.Fatal("client without a certificate accepted")
	} else {
		t.Logf("no certificate: %v", err)
	}
	// The plain port still serves four-letter words.
	if out, err := zktest.FourLetter(s.Addr(), "ruok", 5*time.Second); err != nil || out != "imok" {
		t.Fatalf("ruok on the plain port = %q, %v", out, err)
	}
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
