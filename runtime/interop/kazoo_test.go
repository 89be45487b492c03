package interop_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// kazooLayout names our nodes the way kazoo does.
var kazooLayout = runtime.WithLayout(runtime.LayoutKazoo)

// Go mutexes with the kazoo layout and kazoo Lock processes hammer one
// path: no two holders ever overlap.
func TestKazooMutex(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	const goN, kzN, cycles = 2, 2, 100

	want := map[string]int{}
	var argsList []peerArgs
	for i := range kzN {
		a := peerArgs{zk: srv.Servers(), name: fmt.Sprintf("kazoo%d", i), roles: []string{"m"}, cycles: cycles}
		a.who(want)
		argsList = append(argsList, a)
	}
	var goes []goContender
	for i := range goN {
		g := goContender{who: fmt.Sprintf("go%d-x", i), lock: runtime.NewLock(connect(t, srv), runtime.At(path), kazooLayout), mode: "x", cycles: cycles}
		want[g.who] = cycles
		goes = append(goes, g)
	}
	ref := newReferee(t, len(want))
	var peers []*peer
	for _, a := range argsList {
		a.path, a.referee = path, ref.Addr()
		peers = append(peers, kz.start(t, a))
	}
	took := hammer(t, ctx, ref, goes, peers)

	st := ref.check(t, want)
	assertEmpty(t, connect(t, srv), path)
	logRun(t, st, took, peers)
	t.Logf("kazoo %s (Debian python3-kazoo %s, %s)", peerVersion(peers), debianVersion("python3-kazoo"), kz.python)
}

// Go read/write locks with the kazoo layout (readers and a writer) and kazoo
// WriteLock processes hammer one path: a writer never overlaps anyone, and
// the Go readers do overlap.
//
// kazoo ReadLock is left out of the hammer: in kazoo 2.8 (and every release
// without python-zk/kazoo#650) a waiting ReadLock waits for the highest
// write node of the directory, even one queued after it, while that writer
// waits for the reader: the two deadlock (python-zk/kazoo#649), with any
// writer, ours or kazoo's. TestKazooRWLockHandOff covers kazoo readers in
// the orders that cannot deadlock.
func TestKazooRWLock(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	const (
		readCycles  = 60
		writeCycles = 40
		holdR       = 3 * time.Millisecond
		holdX       = time.Millisecond
	)

	want := map[string]int{}
	var argsList []peerArgs
	for i := range 2 {
		a := peerArgs{zk: srv.Servers(), name: fmt.Sprintf("kazoo%d", i), roles: []string{"w"}, cycles: writeCycles, holdX: holdX}
		a.who(want)
		argsList = append(argsList, a)
	}
	var goes []goContender
	for i := range 2 {
		rw := runtime.NewRWLock(connect(t, srv), runtime.At(path), kazooLayout)
		g := goContender{who: fmt.Sprintf("go%d-r", i), lock: rw.Read(), mode: "r", cycles: readCycles, hold: holdR}
		want[g.who] = g.cycles
		goes = append(goes, g)
	}
	rw := runtime.NewRWLock(connect(t, srv), runtime.At(path), kazooLayout)
	goes = append(goes, goContender{who: "go2-w", lock: rw.Write(), mode: "x", cycles: writeCycles, hold: holdX})
	want["go2-w"] = writeCycles

	ref := newReferee(t, len(want))
	var peers []*peer
	for _, a := range argsList {
		a.path, a.referee = path, ref.Addr()
		peers = append(peers, kz.start(t, a))
	}
	took := hammer(t, ctx, ref, goes, peers)

	st := ref.check(t, want)
	if st.overlaps == 0 {
		t.Errorf("readers never overlapped in %d cycles: the read side was not shared", st.total)
	}
	assertEmpty(t, connect(t, srv), path)
	logRun(t, st, took, peers)
	t.Logf("kazoo %s", peerVersion(peers))
}

// Step by step, with each side holding in turn:
//  1. a kazoo ReadLock holder and a Go reader hold together, and a Go
//     writer is refused;
//  2. a kazoo WriteLock queued behind a Go reader makes a later Go reader
//     wait, and gets the lock when the reader leaves;
//  3. a kazoo ReadLock queued behind a Go writer (and no later writer)
//     waits for it, and gets the lock when the writer leaves.
func TestKazooRWLockHandOff(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	s := connect(t, srv)
	rw := runtime.NewRWLock(s, runtime.At(path), kazooLayout)
	base := peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), cycles: 1}

	// 1.
	a := base
	a.name, a.roles = "kr", []string{"r"}
	entered, release := ref.holdNext("kr-0-r")
	krProc := kz.start(t, a)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatalf("kazoo reader never entered: %v; output:\n%s", ctx.Err(), krProc.out.Tail(20))
	}
	leave := holdLock(t, ctx, ref, "go-r1", rw.Read(), "r")
	mustNotGet(t, ctx, rw.Write(), "a kazoo reader and a Go reader hold the lock")
	leave()
	release()
	if err := krProc.wait(ctx); err != nil {
		t.Fatal(err)
	}

	// 2.
	leave = holdLock(t, ctx, ref, "go-r2", rw.Read(), "r")
	a = base
	a.name, a.roles = "kw", []string{"w"}
	kwProc := kz.start(t, a)
	waitChild(t, ctx, s, path, "the kazoo writer's node", func(n string) bool { return strings.Contains(n, "__lock__") })
	mustNotGet(t, ctx, rw.Read(), "a kazoo writer waits before it")
	leave()
	if err := kwProc.wait(ctx); err != nil {
		t.Fatal(err)
	}

	// 3.
	leave = holdLock(t, ctx, ref, "go-w", rw.Write(), "x")
	a = base
	a.name, a.roles = "kr2", []string{"r"}
	kr2Proc := kz.start(t, a)
	waitChild(t, ctx, s, path, "the kazoo reader's node", func(n string) bool { return strings.Contains(n, "__rlock__") })
	leave()
	if err := kr2Proc.wait(ctx); err != nil {
		t.Fatal(err)
	}

	ref.check(t, map[string]int{"kr-0-r": 1, "go-r1": 1, "go-r2": 1, "kw-0-w": 1, "go-w": 1, "kr2-0-r": 1})
	if st := ref.stats(); st.overlaps < 1 {
		t.Errorf("the Go reader did not share the lock with the kazoo reader: %s", ref)
	}
	assertEmpty(t, s, path)
}

// The layouts are not interchangeable: kazoo's Lock ignores nodes in
// Curator's layout (our default), so a kazoo Lock gets in while a Go lock
// with the default layout is held. This is the negative control of the
// referee — it must see that overlap — and the reason a lock shared with
// kazoo must say layout: kazoo.
func TestKazooIgnoresCuratorLayout(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	s := connect(t, srv)

	leave := holdLock(t, ctx, ref, "go-x", runtime.NewLock(s, runtime.At(path)), "x")
	p := kz.start(t, peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), name: "kz", roles: []string{"m"}, cycles: 1})
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	leave()
	st := ref.stats()
	if len(st.bad) != 1 || !strings.Contains(st.bad[0], "VIOLATION: kz-0-m entered exclusively while inside: go-x(x)") {
		t.Fatalf("want exactly the kazoo lock's overlap with the Go lock recorded, got %q", st.bad)
	}
	assertEmpty(t, s, path)
}
