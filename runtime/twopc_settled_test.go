package runtime_test

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A coordinator does not read again a commit vote it has read, as long as
// the watch it left on that vote node has not fired (votes are written
// once). Here a waiting coordinator has read database's commit; the
// transaction is then deleted behind its back (plain deletes), proposed
// again, and voted commit by cache and search, then abort by database. The
// deletion fired the watch, so the coordinator reads database's vote again
// and decides Abort; had it kept the old commit, it would have decided
// Commit as soon as search voted.
func TestTwoPCCoordinatorRereadsChangedVote(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	p := runtime.At(testRoot(t)).Str("id", "tx-1")
	mk := func(s *runtime.Session) *runtime.TwoPhaseCommit[string] {
		return runtime.NewTwoPhaseCommit(s, p, runtime.StringCodec(), sites)
	}
	admin := connect(t, srv.Servers())
	if err := mk(admin).Propose(ctx); err != nil {
		t.Fatal(err)
	}
	voter := mk(connect(t, srv.Servers()))
	if err := voter.Vote(ctx, sites[0], runtime.Commit); err != nil {
		t.Fatal(err)
	}
	px := zktest.NewProxy(t, srv.Addr())
	obs := mk(connect(t, []string{px.Addr()}))
	px.ResetCounts() // Connect's own read of the ensemble's configuration
	type result struct {
		d   runtime.Decision
		err error
	}
	got := make(chan result, 1)
	go func() {
		d, err := obs.Outcome(ctx)
		got <- result{d, err}
	}()
	// The decision and the three votes read: database's commit is
	// settled. The proxy's count is the only signal of it.
	for px.Requests(zktest.OpGetData) < int64(1+len(sites)) {
		time.Sleep(time.Millisecond)
	}

	dir := p.String()
	kids := childrenOf(t, admin, dir)
	for _, k := range kids {
		if err := admin.Conn().Delete(dir+"/"+k, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Conn().Delete(dir, -1); err != nil {
		t.Fatal(err)
	}
	again := mk(admin)
	if err := again.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pt := range sites[1:] {
		if err := mk(admin).Vote(ctx, pt, runtime.Commit); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("Outcome = %v, %v before database voted again", r.d, r.err)
	default:
	}
	if err := mk(admin).Vote(ctx, sites[0], runtime.Abort); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.d != runtime.Abort {
		t.Fatalf("Outcome = %v, %v; want abort", r.d, r.err)
	}
}
