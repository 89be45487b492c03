package interop_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// semaphoreRun is a mixed semaphore of leases: goN Go participants and one
// peer process of peerN threads, each taking a lease cycles times and
// holding it for hold. The referee sees every holder (mode s).
type semaphoreRun struct {
	leases, goN, peerN, cycles int
	hold                       time.Duration
	opts                       []runtime.HandleOption
	start                      func(t *testing.T, a peerArgs) *peer
	peerName                   string
}

// run plays it and checks: never more than leases holders at once, and the
// semaphore was full at some moment (it was really shared).
func (r semaphoreRun) run(t *testing.T, srv *zktest.Server) (stats, []*peer) {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	a := peerArgs{zk: srv.Servers(), name: r.peerName, cycles: r.cycles, holdX: r.hold, leases: r.leases}
	for range r.peerN {
		a.roles = append(a.roles, "s")
	}
	var goes []goContender
	for i := range r.goN {
		who := fmt.Sprintf("go%d-s", i)
		m := runtime.NewSemaphore(connect(t, srv), runtime.At(path), r.leases, r.opts...)
		goes = append(goes, goContender{who: who, lock: &semaphoreSection{m: m}, mode: "s", cycles: r.cycles, hold: r.hold})
	}
	st, peers := mixed(t, ctx, path, r.leases, goes, []peerStart{{a, r.start}})
	if st.maxS != r.leases {
		t.Errorf("at most %d holders at once, want the semaphore full (%d) at some moment", st.maxS, r.leases)
	}
	t.Logf("most holders at once: %d of %d leases", st.maxS, r.leases)
	return st, peers
}

// Go participants (Curator layout, the default) and Curator
// InterProcessSemaphoreV2 threads share a semaphore of 3 leases: never more
// than 3 holders.
func TestCuratorSemaphore(t *testing.T) {
	srv := server(t)
	cur := curator(t)
	_, peers := semaphoreRun{leases: 3, goN: 3, peerN: 3, cycles: 15, hold: 20 * time.Millisecond, start: cur.start, peerName: "curator"}.run(t, srv)
	t.Logf("Curator %s", peerVersion(peers))
}

// Go participants with the kazoo layout and kazoo Semaphore threads share a
// semaphore of 3 leases: never more than 3 holders.
func TestKazooSemaphore(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	_, peers := semaphoreRun{leases: 3, goN: 3, peerN: 3, cycles: 15, hold: 20 * time.Millisecond, opts: []runtime.HandleOption{kazooLayout},
		start: kz.start, peerName: "kazoo"}.run(t, srv)
	t.Logf("kazoo %s", peerVersion(peers))
}

// kazoo records max_leases in the semaphore's node: a Go handle with
// another number of leases is refused (ErrSpecMismatch) and takes no part,
// and so is a kazoo Semaphore with another number in a directory a Go
// handle created.
func TestKazooSemaphoreLeasesMismatch(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	ref.setLeases(3)
	p := kz.start(t, peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), name: "kz3", roles: []string{"s"}, cycles: 1, leases: 3})
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, srv)
	_, err := runtime.NewSemaphore(s, runtime.At(path), 2, kazooLayout).Acquire(ctx)
	if !errors.Is(err, runtime.ErrSpecMismatch) || !strings.Contains(err.Error(), "max_leases 3, this handle has 2 leases") {
		t.Fatalf("a 2-lease handle on kazoo's 3-lease semaphore: got %v, want ErrSpecMismatch naming both numbers", err)
	}
	if kids := children(t, s, path); len(kids) != 0 {
		t.Errorf("the refused handle left %v", kids)
	}
	// The other way: a Go handle creates the directory with 2 leases; a kazoo
	// Semaphore of 4 refuses it.
	path2 := testRoot(t)
	l, err := runtime.NewSemaphore(s, runtime.At(path2), 2, kazooLayout).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p = kz.start(t, peerArgs{zk: srv.Servers(), path: path2, referee: ref.Addr(), name: "kz4", roles: []string{"s"}, cycles: 1, leases: 4})
	err = p.wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "Inconsistent max leases: 2, expected: 4") {
		t.Fatalf("kazoo Semaphore(max_leases=4) on a 2-lease directory: %v; want kazoo's refusal", err)
	}
	ref.check(t, map[string]int{"kz3-0-s": 1})
}

// The negative control: a kazoo Semaphore does not see leases in Curator's
// layout (a semaphore's default) — it counts the children of the path,
// where Curator's layout has two directories — so with 3 Go holders of 3
// leases a kazoo thread still gets in. The referee must see 4 holders.
func TestKazooSemaphoreIgnoresCuratorLayout(t *testing.T) {
	srv := server(t)
	kz := kazoo(t)
	ctx := testCtx(t, time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	ref.setLeases(3)
	for i := range 3 {
		m := runtime.NewSemaphore(connect(t, srv), runtime.At(path), 3)
		holdLock(t, ctx, ref, fmt.Sprintf("go%d-s", i), &semaphoreSection{m: m}, "s")
	}
	p := kz.start(t, peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), name: "kz", roles: []string{"s"}, cycles: 1, leases: 3})
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	st := ref.stats()
	if len(st.bad) != 1 || !strings.HasPrefix(st.bad[0], "VIOLATION: kz-0-s took lease 4 of 3") {
		t.Fatalf("want exactly the kazoo holder's excess recorded, got %q", st.bad)
	}
}
