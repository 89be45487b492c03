//go:build linux

package serve_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// serve frozen (SIGSTOP) until the server has expired its session, then
// resumed: it must not go on with the dead session's view. It notices the
// session is gone, opens a new one and reads what changed while it slept.
func TestServeFrozenPastItsSession(t *testing.T) {
	srv := zktest.Start(t)
	srv.RequireLocal(t)
	provision(t, srv.Addr())
	base, pid := startServePID(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	if _, err := c.Hits().Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var first string
	awaitState(t, base, func(st apiState) bool { first = st.Session; return st.Up && st.counter("hits") == 1 })

	if out, err := zktest.FourLetter(srv.Addr(), "cons", 5*time.Second); err != nil || !strings.Contains(out, "sid="+first) {
		t.Fatalf("cons does not list serve's session %s (%v):\n%s", first, err, out)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	// The server expires the frozen session and drops its connection: cons
	// stops listing it. (Polled: the server says so to nobody.)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, err := zktest.FourLetter(srv.Addr(), "cons", 5*time.Second)
		if err == nil && !strings.Contains(out, "sid="+first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still lists serve's session %s a minute into the freeze", first)
		}
	}
	if _, err := c.Hits().Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	resume()
	awaitState(t, base, func(st apiState) bool { return st.Up && st.Session != first && st.counter("hits") == 2 })
}
