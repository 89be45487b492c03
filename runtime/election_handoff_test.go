package runtime_test

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A candidate whose predecessor was the first candidate when it listed
// leads once that one is gone without listing again; the one behind it,
// whose predecessor was not first, lists on its wake-up.
func TestElectionHandOffWithoutListing(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	leader, err := runtime.NewElection(admin, runtime.At(dir), runtime.StringCodec()).Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	type candidate struct {
		px  *zktest.Proxy
		s   *runtime.Session
		got chan *runtime.Leadership[string]
	}
	queue := func(name string, children int) candidate {
		t.Helper()
		px := zktest.NewProxy(t, srv.Addr())
		c := candidate{px: px, s: connectVia(t, px), got: make(chan *runtime.Leadership[string], 1)}
		e := runtime.NewElection(c.s, runtime.At(dir), runtime.StringCodec())
		go func() {
			l, err := e.Campaign(ctx, name)
			if err != nil {
				t.Error(err)
			}
			c.got <- l
		}()
		waitChildren(t, ctx, admin, dir, children)
		select {
		case <-px.RepliesReach(zktest.OpGetData, 1): // its predecessor watched
		case <-c.got:
			t.Fatalf("%s led while another leads", name)
		}
		return c
	}
	leads := func(c candidate, name string, listings, handOffs int64) *runtime.Leadership[string] {
		t.Helper()
		var l *runtime.Leadership[string]
		select {
		case l = <-c.got:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		if l == nil {
			t.FailNow()
		}
		handOffCounts(t, name, c.px, c.s, listings, handOffs)
		return l
	}
	// The directory holds the epoch, the acknowledgement and the leader's
	// node, then each candidate's.
	c1 := queue("c1", 4)
	c2 := queue("c2", 5)
	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	// Children reads: the entry's listing, the leader's watch on its own
	// node (a child watch), and, without the hand-off, the wake-up's
	// listing.
	l1 := leads(c1, "c1", 2, 1)
	select {
	case <-c2.got:
		t.Fatal("c2 leads while c1 does")
	default:
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	leads(c2, "c2", 3, 0)
}
