package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

type candidate struct {
	Name string `json:"name"`
}

// nextState reads the observer until it delivers a state accepted by want,
// failing on a state that breaks the order: an elected state whose epoch is
// not above the last one seen.
func nextState(t *testing.T, ctx context.Context, obs <-chan runtime.LeaderState[candidate], last *int64, want func(runtime.LeaderState[candidate]) bool) runtime.LeaderState[candidate] {
	t.Helper()
	for {
		select {
		case st, ok := <-obs:
			if !ok {
				t.Fatal("Observe closed")
			}
			if st.Elected {
				if st.Epoch <= *last {
					t.Fatalf("observed epoch %d after %d: epochs must grow", st.Epoch, *last)
				}
				*last = st.Epoch
			}
			if want(st) {
				return st
			}
		case <-ctx.Done():
			t.Fatalf("observer: %v", ctx.Err())
		}
	}
}

// 5 candidates campaign at once: exactly one leads. Killing the leader's
// session elects exactly one successor, whose acknowledgement carries a
// higher epoch, until none is left; Observe sees every leader and then "no
// leader".
func TestElectionSuccession(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const n = 5

	obsSess := connect(t, srv.Servers())
	watcher := runtime.NewElection(obsSess, runtime.At(dir), runtime.JSONCodec[candidate]())
	obs := watcher.Observe(ctx)
	var lastEpoch int64
	nextState(t, ctx, obs, &lastEpoch, func(st runtime.LeaderState[candidate]) bool { return !st.Elected })

	type win struct {
		i int
		l *runtime.Leadership[candidate]
	}
	var active atomic.Int32 // leaders whose session we have not closed yet
	wins := make(chan win, n)
	sessions := make([]*runtime.Session, n)
	for i := range sessions {
		sessions[i] = connect(t, srv.Servers())
		e := runtime.NewElection(sessions[i], runtime.At(dir), runtime.JSONCodec[candidate]())
		go func() {
			l, err := e.Campaign(ctx, candidate{fmt.Sprint("c", i)})
			if err != nil {
				if sessions[i].Err() == nil {
					t.Errorf("candidate %d: %v", i, err)
				}
				return
			}
			if a := active.Add(1); a != 1 {
				t.Errorf("candidate %d elected while %d other leader(s) are alive", i, a-1)
			}
			wins <- win{i, l}
		}()
	}
	var prevEpoch int64
	for k := 0; k < n; k++ {
		var w win
		select {
		case w = <-wins:
		case <-ctx.Done():
			t.Fatalf("after %d leaders, no successor: %v", k, ctx.Err())
		}
		if w.l.Epoch() <= prevEpoch {
			t.Fatalf("leader %d has epoch %d after %d", k, w.l.Epoch(), prevEpoch)
		}
		prevEpoch = w.l.Epoch()
		// The acknowledgement is written before Campaign returns.
		st, err := watcher.State(ctx)
		if err != nil || !st.Elected || st.Epoch != w.l.Epoch() || st.Payload.Name != fmt.Sprint("c", w.i) {
			t.Fatalf("acknowledged leader %+v, %v; want c%d at epoch %d", st, err, w.i, w.l.Epoch())
		}
		if got, err := watcher.Leader(ctx); err != nil || got.Name != fmt.Sprint("c", w.i) {
			t.Fatalf("Leader = %v, %v", got, err)
		}
		nextState(t, ctx, obs, &lastEpoch, func(st runtime.LeaderState[candidate]) bool { return st.Elected && st.Epoch == w.l.Epoch() })
		select {
		case <-w.l.Lost():
			t.Fatal("Lost closed while leading")
		default:
		}
		// Kill the leader.
		lctx := w.l.Context()
		active.Add(-1)
		sessions[w.i].Close()
		<-w.l.Lost()
		if !errors.Is(context.Cause(lctx), runtime.ErrLeadershipLost) {
			t.Fatalf("leadership context cause %v", context.Cause(lctx))
		}
	}
	nextState(t, ctx, obs, &lastEpoch, func(st runtime.LeaderState[candidate]) bool { return !st.Elected })
	if _, err := watcher.Leader(ctx); !errors.Is(err, runtime.ErrNoLeader) {
		t.Fatalf("Leader with no candidates = %v, want ErrNoLeader", err)
	}
	select {
	case w := <-wins:
		t.Fatalf("extra leader %d", w.i)
	default:
	}
	// Only the epoch node is left.
	if kids := childrenOf(t, obsSess, dir); len(kids) != 1 || kids[0] != "epoch" {
		t.Fatalf("left behind: %v", kids)
	}
}

// Resign hands leadership to the next candidate, which acknowledges with a
// higher epoch; a cancelled Campaign removes its node; the handle can
// campaign again; a second Campaign on a busy handle is refused.
func TestElectionResignCancelReuse(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	as, bs := connect(t, srv.Servers()), connect(t, srv.Servers())
	a := runtime.NewElection(as, runtime.At(dir), runtime.StringCodec())
	b := runtime.NewElection(bs, runtime.At(dir), runtime.StringCodec())

	la, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Curator LeaderLatch's layout, plus the acknowledgement and the epoch.
	latch := regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-latch-[0-9]{10}$`)
	kids := childrenOf(t, as, dir)
	slices.Sort(kids)
	if len(kids) != 3 || !latch.MatchString(kids[0]) || kids[1] != "epoch" || kids[2] != "leader" || "/"+kids[0] != strings.TrimPrefix(la.Node(), dir) {
		t.Fatalf("election nodes %v (leader node %s)", kids, la.Node())
	}
	if _, err := a.Campaign(ctx, "a"); !errors.Is(err, runtime.ErrAlreadyHeld) {
		t.Fatalf("second Campaign on a leading handle = %v", err)
	}
	// A waiting candidate gives up: its node goes.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := b.Campaign(cctx, "b"); done <- err }()
	waitChildren(t, ctx, as, dir, 4) // epoch, leader, a, b
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Campaign = %v", err)
	}
	waitChildren(t, ctx, as, dir, 3)

	go func() {
		lb, err := b.Campaign(ctx, "b")
		if err == nil && lb.Epoch() != la.Epoch()+1 {
			err = fmt.Errorf("successor epoch %d after %d", lb.Epoch(), la.Epoch())
		}
		done <- err
	}()
	waitChildren(t, ctx, as, dir, 4)
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Resign(ctx); !errors.Is(err, runtime.ErrNotLeader) {
		t.Fatalf("second Resign = %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := a.Leader(ctx); err != nil || got != "b" {
		t.Fatalf("Leader = %q, %v", got, err)
	}
	// a campaigns again, behind b.
	go func() { _, err := a.Campaign(ctx, "a2"); done <- err }()
	waitChildren(t, ctx, as, dir, 4)
	bs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := a.Leader(ctx); err != nil || got != "a2" {
		t.Fatalf("Leader = %q, %v", got, err)
	}
}

// A candidate whose session expires never reports leadership: a waiting
// candidate's Campaign fails with ErrSessionExpired even when its turn
// comes, and an expired leader's leadership is lost, its acknowledgement
// gone and its successor acknowledged with a higher epoch.
func TestElectionExpiredCandidateNeverLeads(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	ls := connect(t, srv.Servers())
	leader := runtime.NewElection(ls, runtime.At(dir), runtime.StringCodec())
	ll, err := leader.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}

	// A waiting candidate behind a proxy, then expired.
	p := zktest.NewProxy(t, srv.Addr())
	xs := connect(t, []string{p.Addr()})
	x := runtime.NewElection(xs, runtime.At(dir), runtime.StringCodec())
	got := make(chan error, 1)
	go func() {
		l, err := x.Campaign(ctx, "x")
		if err == nil {
			err = fmt.Errorf("expired candidate elected (epoch %d)", l.Epoch())
		}
		got <- err
	}()
	waitChildren(t, ctx, ls, dir, 4)
	creds, ok := p.Session(xs.ID())
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	if err := <-got; !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("expired candidate's Campaign = %v, want ErrSessionExpired", err)
	}
	if err := ll.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Leader(ctx); !errors.Is(err, runtime.ErrNoLeader) {
		t.Fatalf("after the only live leader resigned: %v", err)
	}

	// An expired leader.
	p2 := zktest.NewProxy(t, srv.Addr())
	ys := connect(t, []string{p2.Addr()})
	y := runtime.NewElection(ys, runtime.At(dir), runtime.StringCodec())
	ly, err := y.Campaign(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	succ := make(chan *runtime.Leadership[string], 1)
	go func() {
		l, err := leader.Campaign(ctx, "successor")
		if err != nil {
			t.Error(err)
		}
		succ <- l
	}()
	waitChildren(t, ctx, ls, dir, 4)
	creds, _ = p2.Session(ys.ID())
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	select {
	case <-ly.Lost():
	case <-ctx.Done():
		t.Fatal("expired leader's Lost did not fire")
	}
	if !errors.Is(context.Cause(ly.Context()), runtime.ErrLeadershipLost) {
		t.Fatalf("cause %v", context.Cause(ly.Context()))
	}
	l := <-succ
	if l == nil {
		t.FailNow()
	}
	if l.Epoch() <= ly.Epoch() {
		t.Fatalf("successor epoch %d, expired leader's %d", l.Epoch(), ly.Epoch())
	}
	if got, err := y.Leader(ctx); !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("expired handle's Leader = %q, %v", got, err)
	}
	if err := ly.Resign(ctx); !errors.Is(err, runtime.ErrLeadershipLost) {
		t.Fatalf("Resign after expiry = %v, want ErrLeadershipLost", err)
	}
	if got, err := leader.Leader(ctx); err != nil || got != "successor" {
		t.Fatalf("Leader = %q, %v", got, err)
	}
}

// While 8 candidates wait, each candidate node is watched by at most one
// session: the candidate right after it. The leader's own loss watch is a
// child watch, which wchp does not list.
func TestElectionNoHerd(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const waiters = 8

	ls := connect(t, srv.Servers())
	leader, err := runtime.NewElection(ls, runtime.At(dir), runtime.StringCodec()).Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	elected := make(chan *runtime.Leadership[string], waiters)
	for i := 0; i < waiters; i++ {
		e := runtime.NewElection(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
		go func() {
			l, err := e.Campaign(ctx, fmt.Sprint(i))
			if err != nil {
				t.Error(err)
				return
			}
			elected <- l
		}()
	}
	waitChildren(t, ctx, ls, dir, waiters+3) // + leader, epoch, the leader's candidate node

	var watched map[string][]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := zktest.FourLetter(srv.Addr(), "wchp", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		watched = map[string][]string{}
		n := 0
		for p, sessions := range parseWchp(out) {
			if strings.HasPrefix(p, dir+"/") {
				watched[p] = sessions
				n += len(sessions)
			}
		}
		if n >= waiters || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	total := 0
	for p, sessions := range watched {
		if !strings.Contains(p, "-latch-") {
			t.Errorf("%s watched by %v: candidates watch only candidate nodes", p, sessions)
		}
		if len(sessions) > 1 {
			t.Errorf("herd: %s watched by %d sessions %v", p, len(sessions), sessions)
		}
		total += len(sessions)
	}
	if total != waiters || len(watched) != waiters {
		t.Fatalf("want %d watched candidate nodes, one watcher each; wchp shows %v", waiters, watched)
	}
	if _, ok := watched[leader.Node()]; !ok {
		t.Fatalf("the leader's node %s is not watched by its successor: %v", leader.Node(), watched)
	}

	// Leadership passes down the line one at a time.
	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	last := leader.Epoch()
	for k := 0; k < waiters; k++ {
		select {
		case l := <-elected:
			if l.Epoch() != last+1 {
				t.Fatalf("epoch %d after %d", l.Epoch(), last)
			}
			last = l.Epoch()
			if err := l.Resign(ctx); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("only %d of %d successors elected", k, waiters)
		}
	}
}
