package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

// The host list hands out every resolved address once per round, says when
// a round starts again without a connection, and maps each address back to
// the host it was configured as.
func TestHostListRoundsAndNames(t *testing.T) {
	var h hostList
	if err := h.Init([]string{"localhost:2181", "127.0.0.1:2182", "127.0.0.2:2182"}); err != nil {
		t.Fatal(err)
	}
	if got := h.serverName("127.0.0.1:2181"); got != "localhost" {
		t.Errorf("serverName(127.0.0.1:2181) = %q, want localhost (the configured host)", got)
	}
	if got := h.serverName("127.0.0.1:2182"); got != "127.0.0.1" {
		t.Errorf("serverName(127.0.0.1:2182) = %q", got)
	}
	if got := h.serverName("10.0.0.9:1"); got != "10.0.0.9" {
		t.Errorf("serverName of an unknown address = %q", got)
	}
	n := h.Len()
	if n < 3 {
		t.Fatalf("Len = %d, want at least 3", n)
	}
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		a, retry := h.Next()
		if retry {
			t.Fatalf("retryStart within the first round, at %d", i)
		}
		seen[a] = true
	}
	if len(seen) != n {
		t.Fatalf("first round gave %d distinct addresses of %d", len(seen), n)
	}
	if _, retry := h.Next(); !retry {
		t.Fatal("no retryStart after a round without a connection")
	}
	h.Connected()
	for i := 0; i < n-1; i++ {
		if _, retry := h.Next(); retry {
			t.Fatalf("retryStart %d addresses after a connection", i+1)
		}
	}
	if _, retry := h.Next(); !retry {
		t.Fatal("no retryStart when back at the connected address")
	}
	// A repeated address stays repeated (tests route a session through one
	// proxy listed twice, so that a reconnection does not wait a round).
	if err := h.Init([]string{"127.0.0.1:1", "127.0.0.1:1"}); err != nil || h.Len() != 2 {
		t.Fatalf("Init with a repeated address: Len %d, %v; want 2", h.Len(), err)
	}
	if err := h.Init([]string{"no-port"}); err == nil {
		t.Fatal("Init accepted a server without a port")
	}
}

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
