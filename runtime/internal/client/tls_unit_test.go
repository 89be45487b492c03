package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

// Handshake failures that say nothing of TLS are retried; the others are
// refusals.
func TestTLSErrorKinds(t *testing.T) {
	remote := &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}
	if !tlsRefusal(fmt.Errorf("read: %w", remote)) {
		t.Error("a remote alert is not a refusal")
	}
	if tlsRefusal(&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}) {
		t.Error("a reset is a refusal")
	}
	if transient(remote) {
		t.Error("a remote alert is transient")
	}
	if !transient(fmt.Errorf("handshake: %w", io.EOF)) || !transient(&net.OpError{Op: "read", Err: syscall.ECONNRESET}) {
		t.Error("a closed or reset connection is not transient")
	}
	if transient(errors.New("x509: certificate signed by unknown authority")) {
		t.Error("a verification failure is transient")
	}
}
