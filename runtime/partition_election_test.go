package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Candidates on every side of a 3-server ensemble: one pinned to each
// server (cut off with it) and two that may use any server. The first
// leader is the candidate pinned to the ensemble's leader, and that server
// is cut off: the leader must be told it lost its leadership before a
// candidate of the majority is acknowledged, with a greater epoch. After the
// partition heals, the leader resigns twice, so that the leadership passes
// on through the queue of candidates.
//
// Each leadership is recorded with its epoch, its start (Campaign returned)
// and its end (Lost closed, or Resign called), on one clock. No two may
// overlap, epochs must grow from each leadership to the next, and when a
// Campaign returns, every earlier leader must already have been told it is
// no longer leader (or have resigned). At the end only the persistent epoch
// node is left.
func TestPartitionElection(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	ctx := testCtx(t, 2*time.Minute)
	cctx, stopCampaigns := context.WithCancel(ctx)
	defer stopCampaigns()
	clk := newClock()
	dir := testRoot(t)
	p := runtime.At(dir)
	x, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		tenures []*leaderTenure
	)
	started := make(chan *leaderTenure, 16)
	resign := make(chan struct{})
	var wg sync.WaitGroup
	candidate := func(name string, servers []string, timeout time.Duration) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				s, err := runtime.Connect(cctx, servers, runtime.WithSessionTimeout(timeout))
				if err != nil {
					continue
				}
				el := runtime.NewElection(s, p, runtime.StringCodec())
				for cctx.Err() == nil && s.Err() == nil {
					ld, err := el.Campaign(cctx, name)
					if err != nil {
						continue // the session ended, or the run did
					}
					tn := &leaderTenure{who: name, epoch: ld.Epoch(), start: clk.now(), s: s, lost: ld.Lost()}
					mu.Lock()
					for _, o := range tenures {
						if !o.told() {
							t.Errorf("%s acknowledged leader (epoch %d) at %v while %s (epoch %d, since %v) had not been told its leadership ended",
								name, tn.epoch, tn.start, o.who, o.epoch, o.start)
						}
					}
					tenures = append(tenures, tn)
					mu.Unlock()
					started <- tn
					select {
					case <-ld.Lost():
						tn.setEnd(clk.now())
					case <-resign:
						tn.setEnd(clk.now())
						tn.resigned.Store(true)
						if err := ld.Resign(ctx); err != nil {
							t.Logf("%s: Resign: %v", name, err)
						}
					case <-cctx.Done():
						tn.setEnd(clk.now())
						tn.resigned.Store(true)
						_ = ld.Resign(ctx)
					}
				}
				s.Close()
			}
		}()
	}
	next := func(when string) *leaderTenure {
		t.Helper()
		select {
		case tn := <-started:
			t.Logf("%s: %s leads, epoch %d, from %v", when, tn.who, tn.epoch, tn.start)
			return tn
		case <-ctx.Done():
			t.Fatalf("%s: nobody was acknowledged leader", when)
			return nil
		}
	}

	// The candidate pinned to the ensemble's leader leads first; then the
	// others queue up behind it.
	first := fmt.Sprintf("pinned-%d", x)
	candidate(first, memberAddrs(e, x), minorityTimeout)
	next("at the start")
	for m := range e.Size() {
		if m != x {
			candidate(fmt.Sprintf("pinned-%d", m), memberAddrs(e, m), minorityTimeout)
		}
	}
	candidate("any-a", e.Servers(), survivorTimeout)
	candidate("any-b", e.Servers(), survivorTimeout)
	watcher := connect(t, e.Servers(), runtime.WithSessionTimeout(survivorTimeout))
	waitChildren(t, ctx, watcher, dir, 5+2) // five candidates, the acknowledgement and the epoch

	isolate(t, e, x)
	tn := next(fmt.Sprintf("member %d cut off", x))
	if tn.who == first {
		t.Fatalf("the candidate cut off with member %d leads again during the partition", x)
	}
	heal(t, e)
	for i := range 2 {
		resign <- struct{}{}
		next(fmt.Sprintf("resignation %d after healing", i+1))
	}
	stopCampaigns()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(tenures, func(a, b *leaderTenure) int { return int(a.start - b.start) })
	for i, tn := range tenures {
		end, ok := tn.getEnd()
		if !ok {
			t.Fatalf("%s's leadership (epoch %d) never ended", tn.who, tn.epoch)
		}
		t.Logf("epoch %d: %s [%v, %v)", tn.epoch, tn.who, tn.start, end)
		if i == 0 {
			continue
		}
		prev := tenures[i-1]
		pend, _ := prev.getEnd()
		if tn.start < pend {
			t.Errorf("leaderships overlap: %s epoch %d [%v, %v) and %s epoch %d from %v", prev.who, prev.epoch, prev.start, pend, tn.who, tn.epoch, tn.start)
		}
		if tn.epoch <= prev.epoch {
			t.Errorf("epoch %d of %s (from %v) is not above epoch %d of %s before it", tn.epoch, tn.who, tn.start, prev.epoch, prev.who)
		}
	}
	if len(tenures) < 4 {
		t.Errorf("%d leaderships; want the first, the majority's, and two after resignations", len(tenures))
	}
	watcher.Close()
	requireTree(t, connect(t, e.Servers()), dir, dir+"/epoch")
}

// leaderTenure is one leadership as its holder saw it.
type leaderTenure struct {
	who      string
	epoch    int64
	start    time.Duration
	s        *runtime.Session
	lost     <-chan struct{}
	resigned atomic.Bool

	mu    sync.Mutex
	end   time.Duration
	ended bool
}

// told reports whether the leader has been told its leadership ended, or
// resigned.
func (l *leaderTenure) told() bool {
	return l.resigned.Load() || closed(l.lost) || closed(l.s.Done())
}

func (l *leaderTenure) setEnd(at time.Duration) {
	l.mu.Lock()
	l.end, l.ended = at, true
	l.mu.Unlock()
}

func (l *leaderTenure) getEnd() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end, l.ended
}
