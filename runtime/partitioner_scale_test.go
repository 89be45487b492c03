package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// scaleGroup is the members of one partitioner, and what their hooks told:
// who owns each partition, and any partition acquired while another member
// owned it.
type scaleGroup struct {
	tb      testing.TB
	servers []string
	dir     string
	n       int

	mu      sync.Mutex
	owner   []int // partition -> member, -1: nobody
	count   map[int]int
	overlap []string
	changed chan struct{} // closed and replaced on every change
	members map[int]*runtime.Assignment[string]
}

func newScaleGroup(tb testing.TB, servers []string, dir string, n int) *scaleGroup {
	g := &scaleGroup{tb: tb, servers: servers, dir: dir, n: n, owner: make([]int, n), count: map[int]int{},
		changed: make(chan struct{}), members: map[int]*runtime.Assignment[string]{}}
	for i := range g.owner {
		g.owner[i] = -1
	}
	return g
}

func (g *scaleGroup) changedLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// join connects member k's session and joins it.
func (g *scaleGroup) join(ctx context.Context, k int) {
	s, err := runtime.Connect(ctx, g.servers, runtime.WithSessionTimeout(10*time.Second))
	if err != nil {
		g.tb.Errorf("member %d: connect: %v", k, err)
		return
	}
	g.tb.Cleanup(func() { s.Close() })
	hooks := runtime.WithPartitionHooks(func(i int) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if o := g.owner[i]; o >= 0 {
			g.overlap = append(g.overlap, fmt.Sprintf("partition %d acquired by %d while %d owned it", i, k, o))
		}
		g.owner[i] = k
		g.count[k]++
		g.changedLocked()
	}, func(i int) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.owner[i] == k {
			g.owner[i] = -1
			g.count[k]--
		}
		g.changedLocked()
	})
	a, err := runtime.NewPartitioner(s, runtime.At(g.dir), g.n, runtime.StringCodec()).Join(ctx, fmt.Sprint("member-", k), hooks)
	if err != nil {
		g.tb.Errorf("member %d: join: %v", k, err)
		return
	}
	g.mu.Lock()
	g.members[k] = a
	g.mu.Unlock()
	go func() { // a reader of the owned set, as a service has one
		for range a.Owned() {
		}
	}()
}

// joinAll joins members ks at once.
func (g *scaleGroup) joinAll(ctx context.Context, ks ...int) {
	var wg sync.WaitGroup
	for _, k := range ks {
		wg.Go(func() { g.join(ctx, k) })
	}
	wg.Wait()
}

// leave makes member k leave, with a context that never ends: Leave must
// end by itself.
func (g *scaleGroup) leave(k int) {
	g.mu.Lock()
	a := g.members[k]
	delete(g.members, k)
	g.mu.Unlock()
	if err := a.Leave(context.Background()); err != nil {
		g.tb.Errorf("member %d: Leave: %v", k, err)
	}
}

// waitBalanced waits until every partition is owned and each member owns
// its share (⌊n/M⌋ or ⌈n/M⌉).
func (g *scaleGroup) waitBalanced(ctx context.Context) {
	for {
		g.mu.Lock()
		ok := len(g.members) > 0
		m := len(g.members)
		for k := range g.members {
			if c := g.count[k]; c < g.n/m || c > (g.n+m-1)/m {
				ok = false
			}
		}
		for _, o := range g.owner {
			ok = ok && o >= 0
		}
		next := g.changed
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-next:
		case <-ctx.Done():
			g.tb.Fatalf("not balanced over %d members: %v", m, ctx.Err())
		}
	}
}

// scaleRun is one run of the scale scenario, and how long each step took.
type scaleRun struct{ own, join, leave, leaveAll time.Duration }

// run: members join at once and own everything, one more joins, one leaves,
// all leave; each step checked.
func (g *scaleGroup) run(ctx context.Context, members int) scaleRun {
	var r scaleRun
	all := make([]int, members)
	for k := range all {
		all[k] = k
	}
	t0 := time.Now()
	g.joinAll(ctx, all...)
	g.waitBalanced(ctx)
	r.own = time.Since(t0)

	t0 = time.Now()
	g.joinAll(ctx, members)
	g.waitBalanced(ctx)
	r.join = time.Since(t0)

	t0 = time.Now()
	g.leave(0)
	g.waitBalanced(ctx)
	r.leave = time.Since(t0)

	t0 = time.Now()
	var wg sync.WaitGroup
	for k := 1; k <= members; k++ {
		wg.Go(func() { g.leave(k) })
	}
	wg.Wait()
	r.leaveAll = time.Since(t0)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.overlap {
		g.tb.Error(o)
	}
	for i, o := range g.owner {
		if o >= 0 {
			g.tb.Errorf("partition %d still owned by %d after every member left", i, o)
			break
		}
	}
	return r
}

// 10,000 partitions over 10 members (the scale): all owned, each by
// one member at a time, in balance; an 11th member's join and a member's
// Leave rebalance; Leave ends by itself (no context bound), and nothing is
// left behind once all left.
// With one member first (it owns all 10,000 alone, and its Leave hands
// them all over), the step the issue found failing.
func TestPartitionerAtScale(t *testing.T) {
	srv := server(t)
	for _, members := range []int{10, 1} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) {
			ctx := testCtx(t, 5*time.Minute)
			dir := testRoot(t)
			r := newScaleGroup(t, srv.Servers(), dir, 10000).run(ctx, members)
			t.Logf("10,000 partitions, %d members: owned in %v; one more joined in %v; one left in %v; all left in %v", members,
				r.own.Round(time.Millisecond), r.join.Round(time.Millisecond), r.leave.Round(time.Millisecond), r.leaveAll.Round(time.Millisecond))
			s := connect(t, srv.Servers())
			if kids := childrenOf(t, s, dir+"/owners"); len(kids) != 0 {
				t.Errorf("%d owner nodes left", len(kids))
			}
		})
	}
}

// BenchmarkPartitionerScale times the scale scenario (TestPartitionerAtScale)
// at 1,000 and 10,000 partitions over 10 members, and 10,000 with one
// member (then one more joins, and the first leaves): own-ms until every
// partition is owned in balance, join-ms for an 11th member, leave-ms for
// one member's Leave until the others own its partitions, leaveall-ms for
// the others' Leave.
func BenchmarkPartitionerScale(b *testing.B) {
	if testing.Short() {
		b.Skip("integration benchmark: needs ZooKeeper")
	}
	srv := zktest.Shared(b, shared, sharedErr)
	for _, c := range []struct{ n, members int }{{1000, 10}, {10000, 10}, {10000, 1}} {
		n := c.n
		b.Run(fmt.Sprintf("partitions=%d/members=%d", n, c.members), func(b *testing.B) {
			var sum scaleRun
			for k := range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				dir := fmt.Sprintf("/zkgen-bench/partitioner-scale-%d-%d-%d", n, time.Now().UnixNano(), k)
				r := newScaleGroup(b, srv.Servers(), dir, n).run(ctx, c.members)
				cancel()
				sum.own += r.own
				sum.join += r.join
				sum.leave += r.leave
				sum.leaveAll += r.leaveAll
			}
			ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
			b.ReportMetric(ms(sum.own), "own-ms")
			b.ReportMetric(ms(sum.join), "join-ms")
			b.ReportMetric(ms(sum.leave), "leave-ms")
			b.ReportMetric(ms(sum.leaveAll), "leaveall-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// A membership that ends while its member acquires (an operator deletes the
// member node between an owner node's create and the read that follows)
// must not leave that owner node on its live session: nobody would own it,
// and the partition would wait for the session's end.
func TestPartitionerLossMidAcquireLeavesNoOwnerNode(t *testing.T) {
	srv := sim.New()
	defer srv.Close()
	ctx := testCtx(t, time.Minute)
	s := connectSim(t, srv)
	op := connectSim(t, srv)
	ready, hit := make(chan *runtime.Assignment[string]), make(chan struct{})
	var once sync.Once
	runtime.OnOwnerCreated(func(i int) {
		if i != 3 {
			return
		}
		once.Do(func() {
			a := <-ready
			if err := op.Delete(ctx, a.Node()); err != nil { // the operator
				t.Error(err)
			}
			<-a.Lost()
			close(hit)
		})
	})
	defer runtime.OnOwnerCreated(nil)
	a, err := runtime.NewPartitioner(s, runtime.At("/p"), 8, runtime.StringCodec()).Join(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	ready <- a
	<-hit
	if err := a.Leave(ctx); !errors.Is(err, runtime.ErrMembershipLost) {
		t.Fatalf("Leave after the loss: %v", err)
	}
	kids, err := s.Children(ctx, "/p/owners")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	for _, k := range kids {
		ok, st, err := s.Conn().Exists("/p/owners/" + k)
		if err == nil && ok && st.EphemeralOwner == s.ID() {
			t.Errorf("owner node %s left on the live session", k)
		}
	}
}
