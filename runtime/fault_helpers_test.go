package runtime_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Helpers shared by the fault matrices (*_fault_test.go).

// faultyClient is a session whose connection runs through its own proxy.
type faultyClient struct {
	p *zktest.Proxy
	s *runtime.Session
}

func newFaulty(t *testing.T, srv *zktest.Server) faultyClient {
	p := zktest.NewProxy(t, srv.Addr())
	return faultyClient{p: p, s: connectVia(t, p)}
}

// connectVia opens a session through p (viaProxy) and then zeroes p's
// counts, so that they count what the test does with the session from
// there on, not Connect's own requests (it reads the ensemble's
// configuration, see WithEnsembleConfig).
func connectVia(t *testing.T, p *zktest.Proxy, opts ...runtime.Option) *runtime.Session {
	t.Helper()
	s := connect(t, viaProxy(p), opts...)
	p.ResetCounts()
	return s
}

// viaProxy is the server list of a client behind p. The address is listed
// twice: go-zookeeper waits a second before it tries a server list again
// from its start, and with two entries it redials at once after a cut.
func viaProxy(p *zktest.Proxy) []string { return []string{p.Addr(), p.Addr()} }

// fault is what happens to a faulty client's connection right after the
// chosen request reached the server (and took effect there).
type fault int

const (
	// cut: the connection is cut; the client reconnects to its session.
	cut fault = iota
	// cutThenWrite: the connection is cut and, before the client can
	// reconnect, another client writes.
	cutThenWrite
	// cutThenExpire: the connection is cut and, before the client can
	// reconnect, the server expires its session.
	cutThenExpire
)

// inject arms the fault on op, runs call, and handles the gap between the
// cut and the reconnection (interleave runs there for cutThenWrite). It
// fails the test if the request never passed the proxy.
func (f faultyClient) inject(t *testing.T, ctx context.Context, srv *zktest.Server, op int32, kind fault, interleave func(), call func() error) error {
	t.Helper()
	if kind != cut {
		f.p.Pause(true) // hold the reconnection
	}
	fired := f.p.CutAfterRequest(op)
	got := make(chan error, 1)
	go func() { got <- call() }()
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatalf("the request (op %d) never passed the proxy", op)
	}
	switch kind {
	case cutThenWrite:
		interleave()
	case cutThenExpire:
		creds, ok := f.p.Session(f.s.ID())
		if !ok {
			t.Fatal("proxy did not see the session")
		}
		zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	}
	f.p.Pause(false)
	return <-got
}

// expire makes the server expire the client's session. The proxy holds
// the client's reconnection meanwhile: a client that redials at once could
// otherwise race the expiring connection for the session.
func (f faultyClient) expire(t *testing.T, srv *zktest.Server) {
	t.Helper()
	f.p.Pause(true)
	defer f.p.Pause(false)
	creds, ok := f.p.Session(f.s.ID())
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
}

// makeDirs creates each path as a persistent node (an existing one is
// fine), in order: so a recipe's create that gets cut does create its node
// instead of just failing on a missing parent.
func makeDirs(t *testing.T, s *runtime.Session, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// treeUnder lists every node below root (root excluded), parents before
// their children, with a plain go-zookeeper call per node.
func treeUnder(t *testing.T, s *runtime.Session, root string) []string {
	t.Helper()
	var out []string
	for _, k := range childrenOf(t, s, root) {
		p := root + "/" + k
		out = append(out, p)
		out = append(out, treeUnder(t, s, p)...)
	}
	return out
}

// requireTree fails the test unless every node below root is one of
// allowed: what the recipe's contract lets survive its clients. Allowed
// nodes may be missing (containers go once they are empty).
func requireTree(t *testing.T, s *runtime.Session, root string, allowed ...string) {
	t.Helper()
	var extra []string
	for _, p := range treeUnder(t, s, root) {
		if !slices.Contains(allowed, p) {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		t.Fatalf("left under %s: %v (only %v may survive)", root, extra, allowed)
	}
}

// waitWatchers blocks until the server reports n sessions watching path
// (wchp: data and exists watches; child watches do not show). The server's
// report is the only view of that, so it is polled with a deadline.
func waitWatchers(t *testing.T, srv *zktest.Server, path string, n int) {
	t.Helper()
	waitWatches(t, srv, path, func(p string) bool { return p == path }, n)
}

// waitWatchersUnder is waitWatchers for the watches on the children of
// dir, counted together: n waiters parked on the nodes they wait for.
func waitWatchersUnder(t *testing.T, srv *zktest.Server, dir string, n int) {
	t.Helper()
	waitWatches(t, srv, dir+"/*", func(p string) bool { return path.Dir(p) == dir }, n)
}

func waitWatches(t *testing.T, srv *zktest.Server, what string, match func(string) bool, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := zktest.FourLetter(srv.Addr(), "wchp", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for p, sessions := range parseWchp(out) {
			if match(p) {
				got += len(sessions)
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d watchers: %s", what, n, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
