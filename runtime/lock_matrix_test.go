package runtime_test

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The lock's fault matrix: a contender behind a proxy has its connection cut
// right after each kind of request of the protocol reaches the server
// (create, children read, predecessor watch, own-node watch, release), or
// while it waits. Every time, it ends up holding the lock alone, releases it,
// and leaves no node behind.
func TestLockFaultMatrix(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name string
		op   int32 // cut after this request; 0: cut while waiting
		// contended: another client holds the lock while the faulty one queues.
		contended bool
	}{
		{"create", zktest.OpCreate, false},
		{"create while contended", zktest.OpCreate, true},
		{"children read", zktest.OpGetChildren2, true},
		{"predecessor watch", zktest.OpGetData, true},
		{"while waiting", 0, true},
		{"release", zktest.OpDelete, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			obs := connect(t, srv.Servers())
			var holder *runtime.Lock
			if tc.contended {
				holder = runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
				if err := holder.Lock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			p := zktest.NewProxy(t, srv.Addr())
			s := connect(t, []string{p.Addr()})
			l := runtime.NewLock(s, runtime.At(dir))
			var fired <-chan struct{}
			if tc.op != 0 && tc.op != zktest.OpDelete {
				fired = p.CutAfterRequest(tc.op)
			}
			got := make(chan error, 1)
			go func() { got <- l.Lock(ctx) }()
			if tc.contended {
				waitChildren(t, ctx, obs, dir, 2)
				if tc.op == 0 {
					p.CutAll()
				}
				if fired != nil {
					<-fired
				}
				if err := holder.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-got; err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if fired != nil {
				select {
				case <-fired:
				default:
					t.Fatal("the fault never fired")
				}
			}
			if kids := childrenOf(t, obs, dir); len(kids) != 1 {
				t.Fatalf("holding: want exactly our node, have %v", kids)
			}
			if tc.op == zktest.OpDelete {
				fired = p.CutAfterRequest(zktest.OpDelete)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if tc.op == zktest.OpDelete {
				<-fired
			}
			if kids := childrenOf(t, obs, dir); len(kids) != 0 {
				t.Fatalf("orphans after Unlock: %v", kids)
			}
			if err := s.Err(); err != nil {
				t.Fatalf("the session should survive a cut connection: %v", err)
			}
		})
	}
}
