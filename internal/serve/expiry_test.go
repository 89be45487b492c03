package serve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// Through a session expiry: serve cut off from ZooKeeper (its connection
// cut and every new one refused) long enough for its session to end shows
// the outage, opens a new session once ZooKeeper answers, and reads
// everything again, including what changed meanwhile.
func TestServeThroughExpiry(t *testing.T) {
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	p := zktest.NewProxy(t, srv.Addr())
	base := startServe(t, p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	if _, err := c.Hits().Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var first string
	awaitState(t, base, func(st apiState) bool { first = st.Session; return st.Up && st.counter("hits") == 1 })

	p.Reject(true)
	p.CutAll()
	awaitState(t, base, func(st apiState) bool { return !st.Up && st.Outage != nil })
	if _, err := c.Hits().Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// the session ends by serve's own clock (it cannot reach the server
	// to learn of the expiry): the outage then says so
	awaitState(t, base, func(st apiState) bool {
		return !st.Up && st.Outage != nil && st.counter("hits") == 1 && st.Outage.Reason != "" && st.Session == first && sessionEnded(st)
	})
	p.Reject(false)
	awaitState(t, base, func(st apiState) bool { return st.Up && st.Session != first && st.counter("hits") == 2 })
}

// sessionEnded reports whether the outage is past the session's end.
func sessionEnded(st apiState) bool {
	return st.Outage != nil && (strings.Contains(st.Outage.Reason, "session ended") || strings.Contains(st.Outage.Reason, "cannot"))
}
