package runtime_test

import (
	"context"
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// faultyTx is one transaction seen by a coordinator, an observer and one
// handle per participant, each on its own session behind its own proxy.
type faultyTx struct {
	ctx      context.Context
	tree     *runtime.Session // no faults: for looking at the nodes
	p        runtime.Path
	coord    *runtime.TwoPhaseCommit[deployment]
	observer *runtime.TwoPhaseCommit[deployment]
	parts    []*runtime.TwoPhaseCommit[deployment]
	fc, fo   faultyClient
	fp       []faultyClient
}

func newFaultyTx(t *testing.T, srv *zktest.Server, opts ...runtime.TwoPCOption) *faultyTx {
	dir := testRoot(t)
	x := &faultyTx{ctx: testCtx(t, time.Minute), tree: connect(t, srv.Servers()), p: runtime.At(dir).Lit("tx")}
	// The parent exists, so a cut Propose does create the transaction.
	makeDirs(t, x.tree, "/zkgen-test", dir)
	mk := func(f faultyClient) *runtime.TwoPhaseCommit[deployment] {
		return runtime.NewTwoPhaseCommit(f.s, x.p, runtime.JSONCodec[deployment](), sites, opts...)
	}
	x.fc, x.fo = newFaulty(t, srv), newFaulty(t, srv)
	x.coord, x.observer = mk(x.fc), mk(x.fo)
	for range sites {
		f := newFaulty(t, srv)
		x.fp = append(x.fp, f)
		x.parts = append(x.parts, mk(f))
	}
	return x
}

// joinAll joins every participant but those skipped.
func (x *faultyTx) joinAll(t *testing.T, skip ...int) {
	t.Helper()
	for i, h := range x.parts {
		if !contains(skip, i) {
			if err := h.Join(x.ctx, sites[i]); err != nil {
				t.Fatalf("Join %s: %v", sites[i], err)
			}
		}
	}
}

// voteAll votes commit for every participant but those skipped.
func (x *faultyTx) voteAll(t *testing.T, skip ...int) {
	t.Helper()
	for i, h := range x.parts {
		if !contains(skip, i) {
			if err := h.Vote(x.ctx, sites[i], runtime.Commit); err != nil {
				t.Fatalf("Vote %s: %v", sites[i], err)
			}
		}
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// vote reads participant i's vote node.
func (x *faultyTx) vote(t *testing.T, i int) (string, int32) {
	t.Helper()
	data, st, err := x.tree.Conn().Get(x.p.String() + "/" + string(sites[i]))
	if err != nil {
		t.Fatal(err)
	}
	return string(data), st.Version
}

// agree has every handle given call Outcome concurrently and requires them
// all to return want, and the decision node to hold want, written once.
func (x *faultyTx) agree(t *testing.T, want runtime.Decision, hs ...*runtime.TwoPhaseCommit[deployment]) {
	t.Helper()
	got := make([]runtime.Decision, len(hs))
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = h.Outcome(x.ctx)
		}()
	}
	wg.Wait()
	for i := range hs {
		if errs[i] != nil || got[i] != want {
			t.Fatalf("handle %d: Outcome = %v, %v; want %v (all: %v)", i, got[i], errs[i], want, got)
		}
	}
	data, st, err := x.tree.Conn().Get(x.p.String() + "/.decision")
	if err != nil || string(data) != want.String() || st.Version != 0 {
		t.Fatalf("decision node %q version %v (%v); want %q written once", data, st, err, want)
	}
}

// finish removes the transaction, closes every client and requires that
// nothing is left.
func (x *faultyTx) finish(t *testing.T) {
	t.Helper()
	if err := runtime.NewTwoPhaseCommit(x.tree, x.p, runtime.JSONCodec[deployment](), sites).Remove(x.ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, f := range append([]faultyClient{x.fc, x.fo}, x.fp...) {
		f.s.Close()
	}
	if kids := childrenOf(t, x.tree, path.Dir(x.p.String())); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}

// The two-phase commit's fault matrix: the connection of the coordinator,
// a participant or an observer is cut right after one of its requests
// reaches the server — the propose multi, the join multi, the vote multi
// (joined or not), the decision create, the outcome reads — or while it
// waits for the outcome; in the expiry variants the server also expires
// that client's session before it reconnects. Each time every observer
// that gets an outcome gets the same one, the decision node is written
// once and never changes, a vote is recorded once and as cast (a lost
// reply never makes a second or a different vote), and after Remove and
// the clients' end nothing is left.
func TestTwoPCFaultMatrix(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name string
		opts []runtime.TwoPCOption
		run  func(t *testing.T, x *faultyTx)
	}{
		{"propose multi", []runtime.TwoPCOption{runtime.WithCoordinatorNotify()}, func(t *testing.T, x *faultyTx) {
			err := x.fc.inject(t, x.ctx, srv, zktest.OpMulti, cut, nil, func() error { return x.coord.Propose(x.ctx) })
			if err != nil {
				t.Fatalf("Propose across a lost reply: %v", err)
			}
			x.joinAll(t)
			x.voteAll(t)
			// The coordinator knows it proposed, so it decides.
			x.agree(t, runtime.Commit, x.coord, x.observer, x.parts[0])
		}},
		{"propose multi, expiry", []runtime.TwoPCOption{runtime.WithCoordinatorNotify()}, func(t *testing.T, x *faultyTx) {
			err := x.fc.inject(t, x.ctx, srv, zktest.OpMulti, cutThenExpire, nil, func() error { return x.coord.Propose(x.ctx) })
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Propose = %v, want ErrSessionExpired", err)
			}
			x.joinAll(t)
			x.voteAll(t)
			// Anyone can take over: the observer coordinates.
			if d, err := x.observer.Coordinate(x.ctx); err != nil || d != runtime.Commit {
				t.Fatalf("Coordinate = %v, %v", d, err)
			}
			x.agree(t, runtime.Commit, x.observer, x.parts[1])
		}},
		{"join multi", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			err := x.fp[0].inject(t, x.ctx, srv, zktest.OpMulti, cut, nil, func() error { return x.parts[0].Join(x.ctx, sites[0]) })
			if err != nil {
				t.Fatalf("Join across a lost reply: %v", err)
			}
			_, st, err := x.tree.Conn().Get(x.p.String() + "/" + string(sites[0]) + ".present")
			if err != nil || st.EphemeralOwner != x.fp[0].s.ID() {
				t.Fatalf("presence node: %v, %v", st, err)
			}
			x.joinAll(t, 0)
			x.voteAll(t)
			x.agree(t, runtime.Commit, x.coord, x.observer, x.parts[0])
		}},
		{"join multi, expiry", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			err := x.fp[0].inject(t, x.ctx, srv, zktest.OpMulti, cutThenExpire, nil, func() error { return x.parts[0].Join(x.ctx, sites[0]) })
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Join = %v, want ErrSessionExpired", err)
			}
			// It joined, and its session ended before it voted: abort.
			x.joinAll(t, 0)
			x.voteAll(t, 0)
			x.agree(t, runtime.Abort, x.coord, x.observer, x.parts[1])
		}},
		{"vote multi", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			x.joinAll(t)
			err := x.fp[0].inject(t, x.ctx, srv, zktest.OpMulti, cut, nil, func() error { return x.parts[0].Vote(x.ctx, sites[0], runtime.Commit) })
			if err != nil {
				t.Fatalf("Vote across a lost reply: %v", err)
			}
			if v, ver := x.vote(t, 0); v != "commit" || ver != 2 {
				t.Fatalf("vote node %q at version %d; want commit, written once after joined", v, ver)
			}
			if err := x.parts[0].Vote(x.ctx, sites[0], runtime.Abort); !errors.Is(err, runtime.ErrAlreadyVoted) {
				t.Fatalf("a different vote after a lost reply = %v, want ErrAlreadyVoted", err)
			}
			x.voteAll(t, 0)
			x.agree(t, runtime.Commit, x.coord, x.observer, x.parts[0])
		}},
		{"vote multi, expiry", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			x.joinAll(t)
			err := x.fp[0].inject(t, x.ctx, srv, zktest.OpMulti, cutThenExpire, nil, func() error { return x.parts[0].Vote(x.ctx, sites[0], runtime.Commit) })
			if err == nil {
				t.Fatal("Vote on an expired session reported success")
			}
			// The vote went in before the session ended: it stands.
			if v, ver := x.vote(t, 0); v != "commit" || ver != 2 {
				t.Fatalf("vote node %q at version %d; want commit, written once", v, ver)
			}
			x.voteAll(t, 0)
			x.agree(t, runtime.Commit, x.coord, x.observer, x.parts[1])
		}},
		{"vote multi, not joined", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			err := x.fp[2].inject(t, x.ctx, srv, zktest.OpMulti, cut, nil, func() error { return x.parts[2].Vote(x.ctx, sites[2], runtime.Abort) })
			if err != nil {
				t.Fatalf("Vote across a lost reply: %v", err)
			}
			if v, ver := x.vote(t, 2); v != "abort" || ver != 1 {
				t.Fatalf("vote node %q at version %d; want abort, written once", v, ver)
			}
			x.voteAll(t, 2)
			x.agree(t, runtime.Abort, x.coord, x.observer, x.parts[0], x.parts[2])
		}},
		{"decision create", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			x.joinAll(t)
			x.voteAll(t)
			// The observer decides first; its create's reply is lost.
			var d runtime.Decision
			err := x.fo.inject(t, x.ctx, srv, zktest.OpCreate, cut, nil, func() error {
				var err error
				d, err = x.observer.Outcome(x.ctx)
				return err
			})
			if err != nil || d != runtime.Commit {
				t.Fatalf("Outcome across a lost reply = %v, %v", d, err)
			}
			x.agree(t, runtime.Commit, x.coord, x.observer, x.parts[0], x.parts[1], x.parts[2])
		}},
		{"decision create, expiry", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			x.joinAll(t)
			x.voteAll(t)
			err := x.fo.inject(t, x.ctx, srv, zktest.OpCreate, cutThenExpire, nil, func() error {
				_, err := x.observer.Outcome(x.ctx)
				return err
			})
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Outcome = %v, want ErrSessionExpired", err)
			}
			x.agree(t, runtime.Commit, x.coord, x.parts[0], x.parts[1], x.parts[2])
		}},
		{"outcome read", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			x.joinAll(t)
			x.voteAll(t, 1)
			fired := x.fo.p.CutAfterRequest(zktest.OpGetData)
			got := make(chan error, 1)
			go func() {
				d, err := x.observer.Outcome(x.ctx)
				if err == nil && d != runtime.Commit {
					err = errors.New("outcome " + d.String())
				}
				got <- err
			}()
			<-fired
			x.voteAll(t, 0, 2)
			if err := <-got; err != nil {
				t.Fatalf("Outcome: %v", err)
			}
			x.agree(t, runtime.Commit, x.coord, x.observer, x.parts[1])
		}},
		{"outcome cut, participant expires", nil, func(t *testing.T, x *faultyTx) {
			if err := x.coord.Propose(x.ctx); err != nil {
				t.Fatal(err)
			}
			x.joinAll(t)
			x.voteAll(t, 2)
			got := make(chan error, 1)
			go func() {
				d, err := x.observer.Outcome(x.ctx)
				if err == nil && d != runtime.Abort {
					err = errors.New("outcome " + d.String())
				}
				got <- err
			}()
			// The observer is cut off while it evaluates or waits (the
			// point varies), and the last participant's session ends
			// before it votes.
			x.fo.p.CutAll()
			x.fp[2].expire(t, srv)
			if err := <-got; err != nil {
				t.Fatalf("Outcome: %v", err)
			}
			x.agree(t, runtime.Abort, x.coord, x.observer, x.parts[0])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFaultyTx(t, srv, tc.opts...)
			tc.run(t, x)
			x.finish(t)
		})
	}
}
