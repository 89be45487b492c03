package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Clients of a config node on every server of a 3-server ensemble (two
// pinned to each server, cut off with it, and two that may use any server)
// run Get / Set / CompareAndSet while the leader is cut off, the partition
// heals, a follower is cut off, and it heals again. The history must be
// linearizable as a versioned register (registerModel, as in
// TestConfigHistoryLinearizable): a write whose outcome the client cannot
// know (an error other than ErrVersionConflict) is pending, it may or may
// not have taken effect.
//
// A plain read from a follower may lag behind writes the leader has
// committed: ZooKeeper's reads are sequentially consistent, not
// linearizable. So each Get is preceded by a sync of the node, and the
// recorded operation spans both. A copy of the history whose first read is
// doctored must not be linearizable.
//
// The clients run a fixed number of operations in each phase: before the
// first partition, as a member is cut off (the cut comes while they are in
// flight), while it is cut off, after it rejoins.
func TestPartitionConfigLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	ctx := testCtx(t, 2*time.Minute)
	root := testRoot(t)
	p := runtime.At(root).Lit("flags")
	path := root + "/flags"
	codec := runtime.JSONCodec[cfgValue]()
	if _, err := runtime.NewConfig(connect(t, e.Servers()), p, codec).CompareAndSet(ctx, cfgValue{0}, runtime.NoVersion); err != nil {
		t.Fatal(err)
	}
	const phase = 50 // operations in each phase
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	h := newHistory()
	f := newFleet(t, ctx)
	var clients []*fleetClient
	for m := range e.Size() {
		for k := range 2 {
			clients = append(clients, f.client(fmt.Sprintf("pinned-%d%c", m, 'a'+k), e, m))
		}
	}
	clients = append(clients, f.client("any-a", e, -1), f.client("any-b", e, -1))

	// The main goroutine hands out operations, phase by phase, so that the
	// history stays small enough for the checker whatever the timing.
	budget := make(chan struct{}, 1<<12)
	stop := make(chan struct{})
	progress := make(chan struct{}, 1<<12)
	var unknown, lostReads sync.Map
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			var s *runtime.Session
			var cfg *runtime.Config[cfgValue]
			lastVer := runtime.Version(0)
			for k := 0; ; k++ {
				// A client waiting for its server takes no operation.
				cur := c.session(ctx)
				if cur == nil {
					return
				}
				select {
				case <-stop:
					return
				case <-budget:
				}
				if cur != s {
					s, cfg = cur, runtime.NewConfig(cur, p, codec)
				}
				octx, cancel := context.WithTimeout(ctx, 20*time.Second)
				val := (i+1)*100000 + k // unique per write
				call := h.now()
				switch x := r.IntN(10); {
				case x < 4:
					if _, err := s.Conn().Sync(path); err != nil {
						lostReads.Store(k*100+i, err.Error())
						break
					}
					v, ver, err := cfg.Get(octx)
					switch {
					case err == nil:
						lastVer = ver
						h.add(i, regIn{op: "get"}, call, regOut{exists: true, val: v.N, ver: ver}, false)
					case errors.Is(err, runtime.ErrNoValue):
						h.add(i, regIn{op: "get"}, call, regOut{}, false)
					default:
						lostReads.Store(k*100+i, err.Error()) // not recorded
					}
				case x < 7:
					ver, err := cfg.Set(octx, cfgValue{val})
					h.add(i, regIn{op: "set", val: val}, call, regOut{unknown: err != nil, ver: ver}, err != nil)
					if err != nil {
						unknown.Store(k*100+i, err.Error())
					}
				default:
					want := lastVer
					if r.IntN(3) == 0 {
						want = runtime.Version(r.IntN(int(lastVer) + 2))
					}
					ver, err := cfg.CompareAndSet(octx, cfgValue{val}, want)
					conflict := errors.Is(err, runtime.ErrVersionConflict)
					unk := err != nil && !conflict
					h.add(i, regIn{op: "cas", val: val, ver: want}, call, regOut{unknown: unk, conflict: conflict, ver: ver}, unk)
					if err == nil {
						lastVer = ver
					}
					if unk {
						unknown.Store(k*100+i, err.Error())
					}
				}
				cancel()
				progress <- struct{}{}
			}
		}()
	}

	feed := func(n int) {
		for range n {
			budget <- struct{}{}
		}
	}
	wait := func(n int, when string) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-progress:
			case <-ctx.Done():
				t.Fatalf("%s: stalled after %d of %d operations", when, i, n)
			}
		}
	}
	feed(phase)
	wait(phase, "before the partitions")
	prev := -1
	for _, side := range []string{"leader", "follower"} {
		leader, err := e.WaitQuorum(settleQuorum)
		if err != nil {
			t.Fatal(err)
		}
		x := leader
		if side == "follower" {
			x = (leader + 1) % e.Size()
			if x == prev {
				x = (leader + 2) % e.Size()
			}
		}
		prev = x
		pinned := f.pinnedTo(x)
		// Cut off while operations are in flight.
		feed(phase)
		isolate(t, e, x)
		t.Logf("%s %d cut off", side, x)
		wait(phase, fmt.Sprintf("member %d cut off", x))
		feed(phase)
		wait(phase, fmt.Sprintf("member %d cut off", x))
		f.awaitEnd(pinned, fmt.Sprintf("pinned to member %d, cut off", x))
		heal(t, e)
		feed(phase)
		wait(phase, fmt.Sprintf("after member %d rejoined", x))
	}
	close(stop)
	wg.Wait()
	f.closeAll()

	// A last read, after everything, pins the final value.
	final := runtime.NewConfig(connect(t, e.Servers()), p, codec)
	call := h.now()
	v, ver, err := final.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.add(len(clients), regIn{op: "get"}, call, regOut{exists: true, val: v.N, ver: ver}, false)
	count := func(m *sync.Map) int {
		n := 0
		m.Range(func(any, any) bool { n++; return true })
		return n
	}
	t.Logf("%d sessions opened, %d expired; %d writes with unknown outcome, %d reads failed (not recorded)",
		f.opened(), f.expired(), count(&unknown), count(&lostReads))
	h.check(t, registerModel)

	// The checker does reject a history this run could not have produced:
	// the first read (before any partition, so before any operation with an
	// unknown outcome, which keeps the refutation quick) doctored to a value
	// nobody wrote.
	ops := slices.Clone(h.ops)
	first := -1
	for i, op := range ops {
		if out := op.Output.(regOut); op.Input.(regIn).op == "get" && out.exists && (first < 0 || op.Call < ops[first].Call) {
			first = i
		}
	}
	if first < 0 {
		t.Fatal("no read recorded")
	}
	out := ops[first].Output.(regOut)
	out.val = -1
	ops[first].Output = out
	mustBeIllegal(t, registerModel, ops, "the first read doctored to a value nobody wrote")
}
