package interop_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// Go mutexes (Curator layout, the default) and Curator InterProcessMutex
// processes hammer one path: no two holders ever overlap.
func TestCuratorMutex(t *testing.T) {
	srv := server(t)
	cur := curator(t)
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	const goN, curN, cycles = 2, 2, 100

	want := map[string]int{}
	var peerArgsList []peerArgs
	for i := range curN {
		a := peerArgs{zk: srv.Servers(), name: fmt.Sprintf("curator%d", i), roles: []string{"m"}, cycles: cycles}
		a.who(want)
		peerArgsList = append(peerArgsList, a)
	}
	var goes []goContender
	for i := range goN {
		s := connect(t, srv) // a session per contender
		g := goContender{who: fmt.Sprintf("go%d-x", i), lock: runtime.NewLock(s, runtime.At(path)), mode: "x", cycles: cycles}
		want[g.who] = cycles
		goes = append(goes, g)
	}
	ref := newReferee(t, len(want))
	var peers []*peer
	for _, a := range peerArgsList {
		a.path, a.referee = path, ref.Addr()
		peers = append(peers, cur.start(t, a))
	}
	took := hammer(t, ctx, ref, goes, peers)

	st := ref.check(t, want)
	assertEmpty(t, connect(t, srv), path)
	logRun(t, st, took, peers)
	t.Logf("Curator %s (Debian libcurator-recipes-java %s)", peerVersion(peers), cur.version)
}

// Go read/write locks (Curator layout) and Curator InterProcessReadWriteLock
// readers and writers hammer one path: a writer never overlaps anyone, and
// readers do overlap (the read side really is shared).
func TestCuratorRWLock(t *testing.T) {
	srv := server(t)
	cur := curator(t)
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	const (
		readCycles  = 40
		writeCycles = 25
		holdR       = 3 * time.Millisecond
		holdX       = time.Millisecond
	)

	want := map[string]int{}
	var peerArgsList []peerArgs
	for i := range 2 {
		a := peerArgs{zk: srv.Servers(), name: fmt.Sprintf("curator%d", i), roles: []string{"r", "w"}, holdR: holdR, holdX: holdX}
		a.cycles = readCycles
		want[a.name+"-0-r"] = readCycles
		want[a.name+"-1-w"] = readCycles // a peer runs the same number of cycles per thread
		peerArgsList = append(peerArgsList, a)
	}
	var goes []goContender
	for i := range 2 {
		rw := runtime.NewRWLock(connect(t, srv), runtime.At(path))
		g := goContender{who: fmt.Sprintf("go%d-r", i), lock: rw.Read(), mode: "r", cycles: readCycles, hold: holdR}
		want[g.who] = g.cycles
		goes = append(goes, g)
	}
	rw := runtime.NewRWLock(connect(t, srv), runtime.At(path))
	goes = append(goes, goContender{who: "go2-w", lock: rw.Write(), mode: "x", cycles: writeCycles, hold: holdX})
	want["go2-w"] = writeCycles

	ref := newReferee(t, len(want))
	var peers []*peer
	for _, a := range peerArgsList {
		a.path, a.referee = path, ref.Addr()
		peers = append(peers, cur.start(t, a))
	}
	took := hammer(t, ctx, ref, goes, peers)

	st := ref.check(t, want)
	if st.overlaps == 0 {
		t.Errorf("readers never overlapped in %d cycles: the read side was not shared", st.total)
	}
	assertEmpty(t, connect(t, srv), path)
	logRun(t, st, took, peers)
	t.Logf("Curator %s (Debian libcurator-recipes-java %s)", peerVersion(peers), cur.version)
}

// Step by step, with each side holding in turn: a Curator reader and a Go
// reader hold together while a Go writer is refused; a Curator writer
// queued behind a Go reader makes later Go readers wait, and gets the lock
// when the reader leaves.
func TestCuratorRWLockHandOff(t *testing.T) {
	srv := server(t)
	cur := curator(t)
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	s := connect(t, srv)
	rw := runtime.NewRWLock(s, runtime.At(path))
	base := peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), cycles: 1}

	// 1. A Curator reader inside; a Go reader joins it; a Go writer cannot.
	a := base
	a.name, a.roles = "cr", []string{"r"}
	entered, release := ref.holdNext("cr-0-r")
	crProc := cur.start(t, a)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatalf("Curator reader never entered: %v; output:\n%s", ctx.Err(), crProc.out.Tail(20))
	}
	leave := holdLock(t, ctx, ref, "go-r1", rw.Read(), "r")
	mustNotGet(t, ctx, rw.Write(), "a Curator reader and a Go reader hold the lock")
	leave()
	release()
	if err := crProc.wait(ctx); err != nil {
		t.Fatal(err)
	}

	// 2. A Go reader inside; a Curator writer queues behind it; a later
	// Go reader must queue behind that writer; the writer gets the lock
	// once the Go reader leaves.
	leave = holdLock(t, ctx, ref, "go-r2", rw.Read(), "r")
	a = base
	a.name, a.roles = "cw", []string{"w"}
	cwProc := cur.start(t, a)
	waitChild(t, ctx, s, path, "the Curator writer's node", func(n string) bool { return strings.Contains(n, "__WRIT__") })
	mustNotGet(t, ctx, rw.Read(), "a Curator writer waits before it")
	leave()
	if err := cwProc.wait(ctx); err != nil {
		t.Fatal(err)
	}

	ref.check(t, map[string]int{"cr-0-r": 1, "go-r1": 1, "go-r2": 1, "cw-0-w": 1})
	if st := ref.stats(); st.overlaps < 1 {
		t.Errorf("the Go reader did not share the lock with the Curator reader: %s", ref)
	}
	assertEmpty(t, s, path)
}

// peerVersion returns the library version the peers reported.
func peerVersion(peers []*peer) string {
	for _, p := range peers {
		for _, l := range p.summaries() {
			for _, f := range strings.Fields(l) {
				if v, ok := strings.CutPrefix(f, "curator="); ok {
					return v
				}
				if v, ok := strings.CutPrefix(f, "kazoo="); ok {
					return v
				}
			}
		}
	}
	return "?"
}
