package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// ErrTLSHandshake means a connection to a ZooKeeper server failed its TLS
// handshake, or the server's first answer showed that the two sides do not
// agree on TLS: the server's certificate is not trusted or does not name the
// host, the server refused the client's certificate (or its absence), a TLS
// client met a plain port, or a plain client met a TLS port. Retrying does not
// help: Connect fails with it as soon as it is seen, and Supervise returns it.
// It is Fatal; the error wraps the cause (a *tls.CertificateVerificationError,
// a remote alert, ...).
//
// A session that is already established treats such a failure on a
// reconnection as a failed connection attempt: it tries the other servers
// and gives up when WithSessionTimeout says.
var ErrTLSHandshake = errors.New("zookeeper: TLS handshake failed")

// DialFunc opens a network connection to a ZooKeeper server, as
// net.Dialer.DialContext does. address is a "host:port" as given to
// Connect, host names included (the dialer resolves them, or not), unless
// WithResolver is given too: then it is one of the addresses the resolver
// returned, "ip:port". ctx bounds the dial.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// WithDialer makes the session open its connections with dial, for a proxy,
// a tunnel or a custom transport; TLS (WithTLS) runs over the connections it
// returns, verifying the configured host name. Without WithResolver, the
// session resolves no host name: dial is given each "host:port" as given
// to Connect. Default: a net.Dialer, given the addresses the session
// resolved. Each connection attempt is bounded by go-zookeeper's connect
// timeout (one second), through ctx.
func WithDialer(dial DialFunc) Option {
	return func(s *Session) { s.dialer = dial }
}

// WithTLS makes the session speak TLS to the servers' TLS client port
// (ZooKeeper's secureClientPort) with cfg: RootCAs to trust the servers'
// CA, Certificates to present a client certificate (which, with the x509
// authentication provider, makes the session's identity the certificate's
// subject for x509 ACLs). When cfg.ServerName is empty, each connection
// verifies the server's certificate against the host name given to Connect
// for that server (not the IP address it resolved to). cfg is cloned; a nil
// cfg means no TLS.
//
// A handshake that fails, a server that refuses the client's certificate,
// or a port that does not speak TLS makes Connect fail at once with
// ErrTLSHandshake instead of retrying until its context ends. The handshake is bounded by the session
// timeout. Runtime bookkeeping (liveness, zxids) sees the plaintext.
func WithTLS(cfg *tls.Config) Option {
	return func(s *Session) {
		s.tlsConf = nil
		if cfg != nil {
			s.tlsConf = cfg.Clone()
		}
	}
}

// dialConn opens one connection to addr (resolved by hostList), over the
// session's dialer, with TLS when configured.
func dialConn(s *Session, network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := rawDial(ctx, s, network, addr)
	if err != nil || s.tlsConf == nil {
		return c, err
	}
	cfg := s.tlsConf.Clone()
	host := s.hosts.serverName(addr)
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	hctx, hcancel := context.WithTimeout(context.Background(), max(timeout, s.timeout))
	defer hcancel()
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		c.Close()
		if !transient(err) {
			return nil, tlsFailed(s, addr, host, err)
		}
		var ne net.Error
		if !(errors.As(err, &ne) && ne.Timeout()) && !isEstablished(s) && speaksPlain(s, addr) {
			return nil, tlsFailed(s, addr, host, fmt.Errorf("the server closed the connection during the handshake (%w), and its port answers in plain text: it does not speak TLS (ZooKeeper serves TLS on its secureClientPort)", err))
		}
		return nil, err // a slow or closing server, not a disagreement
	}
	return tc, nil
}

// rawDial opens a network connection with WithDialer's dialer or a
// net.Dialer.
func rawDial(ctx context.Context, s *Session, network, addr string) (net.Conn, error) {
	if s.dialer != nil {
		return s.dialer(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// probeTimeout bounds speaksTLS and speaksPlain.
const probeTimeout = 2 * time.Second

// speaksTLS reports whether the server at addr answers a TLS handshake. A
// plain client that a server drops before any reply asks it, before the
// session is established: a TLS port drops a plain client without a word.
// The probe checks no certificate and carries no data; a server that
// answers with a handshake, or with an alert, speaks TLS.
func speaksTLS(s *Session, addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c, err := rawDial(ctx, s, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a probe: no data is sent
	err = tc.HandshakeContext(ctx)
	var oe *net.OpError
	return err == nil || errors.As(err, &oe) && oe.Op == "remote error"
}

// speaksPlain reports whether the server at addr answers a plain
// four-letter word ("srvr", with its statistics or a refusal, both plain
// text): a TLS client that a server drops during the handshake asks it,
// before the session is established. A TLS port drops the word unanswered
// (or answers with a TLS alert).
func speaksPlain(s *Session, addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c, err := rawDial(ctx, s, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := c.SetDeadline(dl); err != nil {
			return false
		}
	}
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return false
	}
	var got [2]byte
	n, _ := io.ReadFull(c, got[:])
	return n > 0 && got != tlsAlertPrefix
}

// tlsFailed reports a connection that failed over TLS: before the session
// is established it ends the attempt (Connect returns the error), after it
// the connection attempt just fails.
func tlsFailed(s *Session, addr, host string, cause error) error {
	err := fmt.Errorf("%w with %s (%s): %w", ErrTLSHandshake, addr, host, cause)
	if isEstablished(s) {
		s.log.Warn("zookeeper connection refused over TLS", "server", addr, "err", cause)
	} else {
		s.end(err)
	}
	return err
}

// isEstablished reports whether the session has been established.
func isEstablished(s *Session) bool {
	select {
	case <-s.established:
		return true
	default:
		return false
	}
}

// transient reports a handshake failure that says nothing of TLS: a
// timeout, or a connection closed or reset by the server (which a server
// that is shutting down or at its connection limit does too).
func transient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// tlsRefusal reports whether err, met reading a connection's first reply,
// shows that the server refused the TLS session (TLS 1.3 tells a refused
// client certificate after the client's handshake completes, in an alert).
func tlsRefusal(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" {
		return true
	}
	var ve *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ve) || errors.As(err, &rh) || errors.As(err, &ua)
}

// tlsAlertPrefix starts a TLS alert record (content type 21, version 3.x):
// what a TLS port answers a plain client with. No ConnectResponse starts so
// (its length would be over 350 MB).
var tlsAlertPrefix = [2]byte{21, 3}
