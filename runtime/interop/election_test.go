package interop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// electionRun is a mixed election: goN Go candidates and peer processes of
// one role e thread each, every one leading cycles terms. Each term is an
// exclusive section of the referee, so two leaders at once are a violation.
type electionRun struct {
	goN, peerN, cycles int
	hold               time.Duration // inside each term
	opts               []runtime.HandleOption
	start              func(t *testing.T, a peerArgs) *peer
	peerName           string
}

// run plays the election and checks it: no two leaders at once, every
// candidate led its terms, leadership passed between the libraries.
func (r electionRun) run(t *testing.T, srv *zktest.Server) (stats, []*peer) {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	var starts []peerStart
	for i := range r.peerN {
		a := peerArgs{zk: srv.Servers(), name: fmt.Sprintf("%s%d", r.peerName, i), roles: []string{"e"}, cycles: r.cycles, holdX: r.hold}
		starts = append(starts, peerStart{a, r.start})
	}
	var goes []goContender
	for i := range r.goN {
		who := fmt.Sprintf("go%d-e", i)
		e := runtime.NewElection(connect(t, srv), runtime.At(path), runtime.StringCodec(), r.opts...)
		goes = append(goes, goContender{who: who, lock: &electionSection[string]{e: e, payload: who}, mode: "x", cycles: r.cycles, hold: r.hold})
	}
	st, peers := mixed(t, ctx, path, 0, goes, starts)
	for _, k := range children(t, connect(t, srv), path) {
		if k != "epoch" { // the election's epoch stays, by design
			t.Errorf("left under %s: %s", path, k)
		}
	}
	return st, peers
}

// Go candidates (Curator layout, the default) and Curator LeaderLatch
// processes in one election: never two leaders at once, and every
// candidate leads its terms.
func TestCuratorElection(t *testing.T) {
	srv := server(t)
	cur := curator(t)
	_, peers := electionRun{goN: 2, peerN: 2, cycles: 15, hold: time.Millisecond, start: cur.start, peerName: "curator"}.run(t, srv)
	t.Logf("Curator %s (Debian libcurator-recipes-java %s)", peerVersion(peers), cur.version)
}

// Go candidates with the kazoo layout and kazoo Election processes in one
// election: never two leaders at once, and every candidate leads its terms.
func TestKazooElection(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	_, peers := electionRun{goN: 2, peerN: 2, cycles: 10, hold: time.Millisecond, opts: []runtime.HandleOption{kazooLayout},
		start: kz.start, peerName: "kazoo"}.run(t, srv)
	t.Logf("kazoo %s (Debian python3-kazoo %s)", peerVersion(peers), debianVersion("python3-kazoo"))
}

// The negative control: kazoo's Election ignores candidates in Curator's
// layout (an election's default), so a kazoo candidate leads beside a Go
// leader that did not declare layout: kazoo. The referee must see it.
func TestKazooElectionIgnoresCuratorLayout(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	s := connect(t, srv)
	e := runtime.NewElection(s, runtime.At(path), runtime.StringCodec())
	leave := holdLock(t, ctx, ref, "go-e", &electionSection[string]{e: e, payload: "go-e"}, "x")
	p := kz.start(t, peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), name: "kz", roles: []string{"e"}, cycles: 1})
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	leave()
	st := ref.stats()
	if len(st.bad) != 1 || !strings.Contains(st.bad[0], "VIOLATION: kz-0-e entered exclusively while inside: go-e(x)") {
		t.Fatalf("want exactly the kazoo leader's overlap with the Go leader recorded, got %q", st.bad)
	}
}

// A Go leader whose ZooKeeper becomes unreachable (its proxy drops every
// byte, so the server expires its session after the session timeout) gives
// up its leadership before the server hands it on: the peer candidate
// waiting behind it leads only after the Go leader has left the referee,
// and the Go candidate leads again on a new session.
func testElectionExpiry(t *testing.T, srv *zktest.Server, start func(*testing.T, peerArgs) *peer, opts ...runtime.HandleOption) {
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	proxy := zktest.NewProxy(t, srv.Servers()[0])
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(cctx, []string{proxy.Addr()}, runtime.WithSessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := runtime.NewElection(s, runtime.At(path), runtime.StringCodec(), opts...)
	l, err := e.Campaign(ctx, "go-e")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := dialReferee(ctx, ref.Addr(), "go-e")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := rc.enter(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	// The peer's candidate queues behind the Go leader.
	p := start(t, peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), name: "peer", roles: []string{"e"}, cycles: 1})
	watcher := connect(t, srv)
	waitChild(t, ctx, watcher, path, "the peer's candidate", func(n string) bool {
		return n != "epoch" && n != "leader" && n != baseName(l.Node())
	})
	proxy.Blackhole(true)
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatalf("the Go leader never noticed the loss of its session: %v", context.Cause(ctx))
	}
	if err := rc.exit(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole(false)
	// A new session campaigns again and leads.
	e2 := runtime.NewElection(connect(t, srv), runtime.At(path), runtime.StringCodec(), opts...)
	leave := holdLock(t, ctx, ref, "go-e2", &electionSection[string]{e: e2, payload: "go-e2"}, "x")
	leave()
	ref.check(t, map[string]int{"go-e": 1, "peer-0-e": 1, "go-e2": 1})
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// See testElectionExpiry: with Curator's LeaderLatch.
func TestCuratorElectionExpiry(t *testing.T) {
	srv := server(t)
	testElectionExpiry(t, srv, curator(t).start)
}

// See testElectionExpiry: with kazoo's Election.
func TestKazooElectionExpiry(t *testing.T) {
	srv := server(t)
	testElectionExpiry(t, srv, kazoo(t).start, kazooLayout)
}

// Evidence of a limit of kazoo's Election, not of the mix: kazoo runs the
// leader function to its end and tells it nothing when the session is lost
// (kazoo/recipe/election.py: run holds the lock around the function; cancel
// "will not interrupt the leadership function"). A kazoo leader whose
// ZooKeeper becomes unreachable — its proxy drops every byte, so the server
// expires its session — is still inside its function when the server hands
// leadership to the next candidate: here a Go candidate, which leads and
// enters. The referee must record that overlap. A zkgen leader in the same
// position gives up first (TestKazooElectionExpiry). A kazoo application
// that must not overlap has to stop on its client's LOST/SUSPENDED state
// itself.
func TestKazooElectionLeaderNotToldOfLoss(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	proxy := zktest.NewProxy(t, srv.Servers()[0])
	entered, release := ref.holdNext("kz-0-e") // a leader function that runs on
	defer release()
	kz.start(t, peerArgs{zk: []string{proxy.Addr()}, path: path, referee: ref.Addr(), name: "kz", roles: []string{"e"}, cycles: 1})
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatalf("the kazoo candidate never led: %v", context.Cause(ctx))
	}
	proxy.Blackhole(true)
	defer proxy.Blackhole(false)
	e := runtime.NewElection(connect(t, srv), runtime.At(path), runtime.StringCodec(), kazooLayout)
	leave := holdLock(t, ctx, ref, "go-e", &electionSection[string]{e: e, payload: "go-e"}, "x")
	leave()
	st := ref.stats()
	if len(st.bad) != 1 || st.bad[0] != "VIOLATION: go-e entered exclusively while inside: kz-0-e(x)" {
		t.Fatalf("want exactly the overlap of the Go leader with the cut-off kazoo leader, got %q", st.bad)
	}
}
