package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The group's fault matrix. Member "a" (no faults) is in the group; member
// "b" joins and leaves through a faulty connection, and a watcher follows
// the group through another. Each connection is cut right after a request
// of the protocol reaches the server — b's join create, b's leave delete,
// the watcher's child-watch re-arm and member read — or, for b, the server
// expires its session at that step or while it is a member. Each time the
// watcher's list and Members converge to the members that are really
// there, b's Join and Leave report what happened, and once every client
// has closed the group directory is empty (no orphan member node).
func TestGroupFaultMatrix(t *testing.T) {
	srv := server(t)
	codec := runtime.JSONCodec[member]()
	type env struct {
		ctx     context.Context
		tree    *runtime.Session
		dir     string
		b       faultyClient // member b's client
		w       faultyClient // the watcher's client
		watch   <-chan runtime.MemberList[member]
		last    *[]string       // the watcher's newest list
		members func() []string // Members, read without faults
	}
	join := func(t *testing.T, e env) *runtime.Membership[member] {
		t.Helper()
		m, err := runtime.NewGroup(e.b.s, runtime.At(e.dir), codec).Join(e.ctx, member{Host: "b"})
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		return m
	}
	// converged waits for the watcher's newest list to be want (it may be
	// already: Watch delivers changes only, and a member that joined and
	// vanished between two reads is no change) and checks Members.
	converged := func(t *testing.T, e env, want ...string) {
		t.Helper()
		for !slices.Equal(*e.last, want) {
			select {
			case ms, ok := <-e.watch:
				if !ok {
					t.Fatal("Watch closed")
				}
				if ms.Err != nil {
					t.Fatalf("watch: %v", ms.Err)
				}
				*e.last = hosts(ms.Members)
			case <-e.ctx.Done():
				t.Fatalf("watch never delivered %v (last %v)", want, *e.last)
			}
		}
		if got := e.members(); !slices.Equal(got, want) {
			t.Fatalf("Members = %v, want %v", got, want)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e env)
	}{
		{"join create", func(t *testing.T, e env) {
			fired := e.b.p.CutAfterRequest(zktest.OpCreate)
			m := join(t, e)
			<-fired
			converged(t, e, "a", "b")
			_, st, err := e.tree.Conn().Get(m.Node())
			if err != nil || st.EphemeralOwner != e.b.s.ID() {
				t.Fatalf("member node %s: owner %v, %v", m.Node(), st, err)
			}
		}},
		{"join create, expiry", func(t *testing.T, e env) {
			err := e.b.inject(t, e.ctx, srv, zktest.OpCreate, cutThenExpire, nil, func() error {
				_, err := runtime.NewGroup(e.b.s, runtime.At(e.dir), codec).Join(e.ctx, member{Host: "b"})
				return err
			})
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Join = %v, want ErrSessionExpired", err)
			}
			converged(t, e, "a")
		}},
		{"watch re-arm", func(t *testing.T, e env) {
			fired := e.w.p.CutAfterRequest(zktest.OpGetChildren2)
			join(t, e)
			<-fired
			converged(t, e, "a", "b")
		}},
		{"watch member read", func(t *testing.T, e env) {
			fired := e.w.p.CutAfterRequest(zktest.OpGetData)
			join(t, e)
			<-fired
			converged(t, e, "a", "b")
		}},
		{"watcher cut while waiting", func(t *testing.T, e env) {
			e.w.p.CutAll()
			join(t, e)
			converged(t, e, "a", "b")
		}},
		{"member cut while joined", func(t *testing.T, e env) {
			m := join(t, e)
			converged(t, e, "a", "b")
			e.b.p.CutAll()
			if err := m.Leave(e.ctx); err != nil {
				t.Fatalf("Leave after a cut: %v", err)
			}
			converged(t, e, "a")
		}},
		{"leave delete", func(t *testing.T, e env) {
			m := join(t, e)
			converged(t, e, "a", "b")
			fired := e.b.p.CutAfterRequest(zktest.OpDelete)
			if err := m.Leave(e.ctx); err != nil {
				t.Fatalf("Leave: %v", err)
			}
			<-fired
			converged(t, e, "a")
		}},
		{"leave delete, expiry", func(t *testing.T, e env) {
			m := join(t, e)
			converged(t, e, "a", "b")
			err := e.b.inject(t, e.ctx, srv, zktest.OpDelete, cutThenExpire, nil, func() error { return m.Leave(e.ctx) })
			if err != nil && !errors.Is(err, runtime.ErrMembershipLost) {
				t.Fatalf("Leave across expiry = %v, want nil or ErrMembershipLost", err)
			}
			converged(t, e, "a")
		}},
		{"member expiry", func(t *testing.T, e env) {
			m := join(t, e)
			converged(t, e, "a", "b")
			e.b.expire(t, srv)
			select {
			case <-m.Lost():
			case <-e.ctx.Done():
				t.Fatal("Lost did not fire after expiry")
			}
			if !errors.Is(context.Cause(m.Context()), runtime.ErrMembershipLost) {
				t.Fatalf("cause %v", context.Cause(m.Context()))
			}
			converged(t, e, "a")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env{ctx: testCtx(t, time.Minute), tree: connect(t, srv.Servers()), dir: testRoot(t)}
			// The directory exists, so the cut create does create a node.
			makeDirs(t, e.tree, "/zkgen-test", e.dir)
			aSess := connect(t, srv.Servers())
			if _, err := runtime.NewGroup(aSess, runtime.At(e.dir), codec).Join(e.ctx, member{Host: "a"}); err != nil {
				t.Fatal(err)
			}
			e.b, e.w = newFaulty(t, srv), newFaulty(t, srv)
			e.last = new([]string)
			e.watch = runtime.NewGroup(e.w.s, runtime.At(e.dir), codec).Watch(e.ctx)
			e.members = func() []string {
				ms, err := runtime.NewGroup(e.tree, runtime.At(e.dir), codec).Members(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				return hosts(ms)
			}
			converged(t, e, "a")
			tc.run(t, e)
			for _, s := range []*runtime.Session{aSess, e.b.s, e.w.s} {
				s.Close()
			}
			if kids := childrenOf(t, e.tree, e.dir); len(kids) != 0 {
				t.Fatalf("orphans under %s: %v", e.dir, kids)
			}
		})
	}
}
