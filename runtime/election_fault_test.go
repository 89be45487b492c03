package runtime_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// observeAll collects every leader state Observe delivers until stop is
// called, which returns them.
func observeAll(ctx context.Context, e *runtime.Election[candidate]) (stop func() []runtime.LeaderState[candidate]) {
	ctx, cancel := context.WithCancel(ctx)
	var states []runtime.LeaderState[candidate]
	done := make(chan struct{})
	ch := e.Observe(ctx)
	go func() {
		defer close(done)
		for st := range ch {
			states = append(states, st)
		}
	}()
	return func() []runtime.LeaderState[candidate] {
		cancel()
		<-done
		return states
	}
}

// The election's fault matrix: a candidate behind a proxy has its
// connection cut right after each request of the protocol reaches the
// server — candidate create, children read, predecessor watch, the
// acknowledgement multi, the resignation multi — or while it waits for its
// predecessor; in the expiry variants the server also expires its session
// before it can reconnect. Each time:
//   - never two live leaders (a leader counts from Campaign's return until
//     Resign is called);
//   - epochs strictly grow, for the leaders and for an observer;
//   - a candidate whose session expired never gets a leadership;
//   - a candidate that survives becomes the acknowledged leader once the
//     current leader resigns, and after it resigns only the epoch node is
//     left.
func TestElectionFaultMatrix(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name      string
		op        int32 // cut after this request; 0: cut while waiting
		contended bool  // another candidate leads when the faulty one campaigns
		expire    bool  // the session expires before the client reconnects
		resign    bool  // the cut is on the faulty leader's Resign
	}{
		{name: "candidate create", op: zktest.OpCreate},
		{name: "candidate create while contended", op: zktest.OpCreate, contended: true},
		{name: "children read", op: zktest.OpGetChildren2, contended: true},
		{name: "predecessor watch", op: zktest.OpGetData, contended: true},
		{name: "while waiting", contended: true},
		{name: "acknowledgement", op: zktest.OpMulti},
		{name: "acknowledgement after succession", op: zktest.OpMulti, contended: true},
		{name: "resign", op: zktest.OpMulti, resign: true},
		{name: "candidate create, expiry", op: zktest.OpCreate, expire: true},
		{name: "predecessor watch, expiry", op: zktest.OpGetData, contended: true, expire: true},
		{name: "while waiting, expiry", contended: true, expire: true},
		{name: "acknowledgement, expiry", op: zktest.OpMulti, expire: true},
		{name: "acknowledgement after succession, expiry", op: zktest.OpMulti, contended: true, expire: true},
		{name: "resign, expiry", op: zktest.OpMulti, resign: true, expire: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			tree := connect(t, srv.Servers())
			// The directory exists, so the cut create does create a node.
			makeDirs(t, tree, "/zkgen-test", dir)
			codec := runtime.JSONCodec[candidate]()
			observed := observeAll(ctx, runtime.NewElection(tree, runtime.At(dir), codec))
			var active atomic.Int32 // live leaders
			var lastEpoch atomic.Int64
			elected := func(l *runtime.Leadership[candidate]) {
				t.Helper()
				if n := active.Add(1); n != 1 {
					t.Errorf("%s elected while %d other leader(s) live", l.Payload().Name, n-1)
				}
				if prev := lastEpoch.Swap(l.Epoch()); l.Epoch() <= prev {
					t.Errorf("%s elected at epoch %d after epoch %d", l.Payload().Name, l.Epoch(), prev)
				}
			}

			var holder *runtime.Leadership[candidate]
			if tc.contended {
				var err error
				holder, err = runtime.NewElection(connect(t, srv.Servers()), runtime.At(dir), codec).Campaign(ctx, candidate{"holder"})
				if err != nil {
					t.Fatal(err)
				}
				elected(holder)
			}
			f := newFaulty(t, srv)
			e := runtime.NewElection(f.s, runtime.At(dir), codec)
			expire := func() {
				t.Helper()
				creds, ok := f.p.Session(f.s.ID())
				if !ok {
					t.Fatal("proxy did not see the session")
				}
				zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
				f.p.Pause(false)
			}
			if tc.expire {
				f.p.Pause(true) // hold the reconnection until the session is expired
			}
			var fired <-chan struct{}
			if tc.op != 0 && !tc.resign {
				fired = f.p.CutAfterRequest(tc.op)
			}
			type res struct {
				l   *runtime.Leadership[candidate]
				err error
			}
			got := make(chan res, 1)
			go func() {
				l, err := e.Campaign(ctx, candidate{"faulty"})
				if err == nil {
					elected(l)
				}
				got <- res{l, err}
			}()
			beforeSuccession := tc.op == zktest.OpCreate || tc.op == zktest.OpGetChildren2 || tc.op == zktest.OpGetData
			if tc.contended {
				waitChildren(t, ctx, tree, dir, 4) // epoch, leader, two candidates
				if tc.op == 0 {
					f.p.CutAll()
				}
				if beforeSuccession {
					<-fired
				}
				if tc.expire && (tc.op == 0 || beforeSuccession) {
					expire()
				}
				active.Add(-1)
				if err := holder.Resign(ctx); err != nil {
					t.Fatal(err)
				}
			} else if tc.expire && tc.op == zktest.OpCreate {
				<-fired
				expire()
			}
			if tc.expire && tc.op == zktest.OpMulti && !tc.resign {
				<-fired
				expire()
			}
			r := <-got
			if fired != nil {
				select {
				case <-fired:
				default:
					t.Fatal("the fault never fired")
				}
			}
			if tc.expire && !tc.resign {
				if r.err == nil {
					t.Fatalf("a candidate whose session expired got leadership at epoch %d", r.l.Epoch())
				}
				if !errors.Is(r.err, runtime.ErrSessionExpired) {
					t.Fatalf("Campaign = %v, want ErrSessionExpired", r.err)
				}
			} else {
				if r.err != nil {
					t.Fatalf("Campaign: %v", r.err)
				}
				st, err := runtime.NewElection(tree, runtime.At(dir), codec).State(ctx)
				if err != nil || !st.Elected || st.Epoch != r.l.Epoch() || st.Payload.Name != "faulty" {
					t.Fatalf("acknowledged %+v, %v; want faulty at epoch %d", st, err, r.l.Epoch())
				}
				var kids []string
				for _, k := range childrenOf(t, tree, dir) {
					if k != "epoch" && k != "leader" {
						kids = append(kids, k)
					}
				}
				if len(kids) != 1 || dir+"/"+kids[0] != r.l.Node() {
					t.Fatalf("candidates %v; want only the leader's %s", kids, r.l.Node())
				}
				if tc.resign {
					fired = f.p.CutAfterRequest(zktest.OpMulti)
				}
				active.Add(-1)
				var rerr error
				if tc.resign && tc.expire {
					resigned := make(chan error, 1)
					go func() { resigned <- r.l.Resign(ctx) }()
					<-fired
					expire()
					rerr = <-resigned
					if rerr != nil && !errors.Is(rerr, runtime.ErrLeadershipLost) {
						t.Fatalf("Resign across expiry = %v, want nil or ErrLeadershipLost", rerr)
					}
				} else if rerr = r.l.Resign(ctx); rerr != nil {
					t.Fatalf("Resign: %v", rerr)
				}
				if tc.resign {
					<-fired
				}
			}
			f.s.Close()
			want := []string{"epoch"} // persistent, by contract
			if lastEpoch.Load() == 0 && !(tc.expire && tc.op == zktest.OpMulti) {
				want = nil // nobody ever led (a cut acknowledgement did bump the epoch)
			}
			if kids := childrenOf(t, tree, dir); !slices.Equal(kids, want) {
				t.Fatalf("left under %s: %v; want %v", dir, kids, want)
			}
			states := observed()
			var last int64
			for _, st := range states {
				if st.Elected {
					if st.Epoch <= last {
						t.Fatalf("observer saw epoch %d after %d: %+v", st.Epoch, last, states)
					}
					last = st.Epoch
				}
			}
		})
	}
}
