package bench

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The scale sweeps: BenchmarkSweep<Recipe>/impl=<impl>/n=<N> measures one
// recipe at one size N against real ZooKeeper, for zkgen and the peers that
// have the recipe, so that the cost can be drawn against N (cmd/benchplot;
// .ci/sweep runs them and redraws the charts in docs/charts). Each uses
// b.Loop, so that its setup (N sessions) runs once per point; .ci/sweep
// fixes the operations per point with -benchtime=<k>x. The largest sizes
// run only with ZKGEN_SWEEP_FULL=1.
//
// Every sweep reports ns/op as the mean time of its operation (a hand-off,
// a failover, a change seen), its own percentiles, and the wire cost per
// operation counted by the proxy between the clients measured and the
// server: req/op (pings left out), notify/op and bytesread/op (the bytes
// of the server's frames, the ping replies' 20 bytes each left out).

// sweepFull reports whether the largest sizes run.
func sweepFull() bool { return os.Getenv("ZKGEN_SWEEP_FULL") == "1" }

// sizes returns def, and full too under ZKGEN_SWEEP_FULL=1.
func sizes(def []int, full ...int) []int {
	if sweepFull() {
		return append(def[:len(def):len(def)], full...)
	}
	return def
}

// peerCap is the largest N at which a peer driver runs: each of its
// sessions is a client with its own threads (Curator: a CuratorFramework
// with its ZooKeeper client; kazoo: a KazooClient): a lock point of 1000
// takes 2 to 3 minutes of the 2-core machine, so thousands are left out.
const peerCap = 1000

// wire is the proxy's counts at a moment, for the difference over a
// measured span.
type wire struct {
	req, notify, read, pings int64
	ops                      map[int32]int64 // requests by opcode
}

func wireNow(p *zktest.Proxy) wire {
	c := p.Counts()
	return wire{c.Total(), c.Notifications, c.BytesRead, c.Requests[zktest.OpPing], c.Requests}
}

// sub returns w - o.
func (w wire) sub(o wire) wire {
	ops := map[int32]int64{}
	for op, k := range w.ops {
		if d := k - o.ops[op]; d != 0 {
			ops[op] = d
		}
	}
	return wire{w.req - o.req, w.notify - o.notify, w.read - o.read, w.pings - o.pings, ops}
}

// add returns a + b.
func (wire) add(a, b wire) wire {
	ops := map[int32]int64{}
	for _, m := range []map[int32]int64{a.ops, b.ops} {
		for op, k := range m {
			ops[op] += k
		}
	}
	return wire{a.req + b.req, a.notify + b.notify, a.read + b.read, a.pings + b.pings, ops}
}

// pingReply is the size of a ping's reply frame: length, xid, zxid, err.
const pingReply = 4 + 16

// report adds the wire cost per operation.
func (w wire) report(b *testing.B, ops int) {
	if ops == 0 {
		return
	}
	b.ReportMetric(float64(w.req)/float64(ops), "req/op")
	b.ReportMetric(float64(w.notify)/float64(ops), "notify/op")
	b.ReportMetric(float64(w.read-pingReply*w.pings)/float64(ops), "bytesread/op")
	if os.Getenv("ZKGEN_BENCH_OPS") != "" {
		b.Logf("requests by opcode over %d operations: %v", ops, w.ops)
	}
}

// latencies reports the mean (as ns/op), p50 and p99 of ds.
func latencies(b *testing.B, ds []time.Duration, pcts ...float64) {
	if len(ds) == 0 {
		b.Fatal("no latencies measured")
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(ds)), "ns/op")
	for _, q := range pcts {
		ms(b, percentile(ds, q), "p"+strconv.Itoa(int(q*100))+"-ms")
	}
}

// loopCount returns the operations b.Loop asks for: the benchmark's fixed
// count (-benchtime=<k>x). It runs the loop empty, so the framework calls
// the benchmark once; for the peers, whose drivers do the operations in
// one round timed by their own clock.
func loopCount(b *testing.B) int {
	n := 0
	for b.Loop() {
		n++
	}
	return n
}

// inLine waits, on the uncounted connection direct, until path has at
// least n children whose names contain marker; it waits on child watches.
func inLine(b *testing.B, direct *zk.Conn, path, marker string, n int) {
	b.Helper()
	deadline := time.After(peerWait)
	for {
		kids, _, w, err := direct.ChildrenW(path)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, w, err = direct.ExistsW(path)
			if err == nil && ok {
				continue
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		c := 0
		for _, k := range kids {
			if strings.Contains(k, marker) {
				c++
			}
		}
		if c >= n {
			return
		}
		select {
		case <-w:
		case <-deadline:
			b.Fatalf("%d of %d in line at %s after %v", c, n, path, peerWait)
		}
	}
}

// many opens n sessions with open, 16 at a time.
func many[S any](n int, open func() S) []S {
	out := make([]S, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i] = open()
			<-sem
		}()
	}
	wg.Wait()
	return out
}

// BenchmarkSweepLock: N sessions, one lock handle each, all contending:
// each takes the lock, gives it up and queues again, so N-1 wait behind
// the holder. A hand-off is the time from the holder's Unlock call to the
// next holder's Lock return (p50-ms, p99-ms; ns/op is the mean time per
// acquisition, hand-off and holding included), with the wire cost per
// acquisition of all N sessions, measured after a first round of N
// acquisitions (unmeasured) has brought every contender into its loop, and
// the CPU time per acquisition of this process (all N clients and the
// proxy: clientcpu-ms/op) and of the ZooKeeper server (servercpu-ms/op),
// which unlike the latencies do not grow with the machine's load. The peers (Curator's InterProcessMutex,
// kazoo's Lock: the lock-contended workload with clients=N) report the
// mean time per acquisition by their driver's clock and the wire cost.
func BenchmarkSweepLock(b *testing.B) {
	for _, n := range sizes([]int{8, 64, 256}, 1000) {
		for _, impl := range impls {
			if impl.name == "zkgen-cancellable" {
				continue
			}
			b.Run("impl="+impl.name+"/n="+strconv.Itoa(n), func(b *testing.B) { sweepLock(b, impl.new, n) })
		}
		for _, impl := range peers {
			b.Run("impl="+impl.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				if n > peerCap {
					b.Skipf("%s runs up to N=%d on this machine", impl.name, peerCap)
				}
				// The driver's clients share a count of acquisitions and
				// stop when it runs out, so the line drains at the end of
				// the round: 8 acquisitions a client keep it full for
				// most of the round (bytesread/op, which grows with the
				// line, shows how full it was).
				ops := max(loopCount(b), 8*n)
				sweepPeer(b, impl, "lock-contended", ops, "clients="+strconv.Itoa(n))
			})
		}
	}
}

func sweepLock(b *testing.B, newLock func(b *testing.B, addr, path string) locker, n int) {
	p, path := setup(b)
	direct := gozk(b, zktest.Shared(b, shared, sharedErr).Addr())
	ls := many(n, func() locker { return newLock(b, p.Addr(), path) })

	var (
		released atomic.Int64 // UnixNano of the last Unlock call
		acquired = make(chan time.Duration)
		start    = make(chan struct{})
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	// The first holder waits for start: until all N are in line.
	var first sync.Once
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := l.lock(); err != nil {
					b.Error(err)
					return
				}
				at := time.Now()
				first.Do(func() { <-start })
				var d time.Duration = -1
				if r := released.Load(); r != 0 {
					d = at.Sub(time.Unix(0, r))
				}
				select {
				case acquired <- d:
				case <-stop:
					if err := l.unlock(); err != nil {
						b.Error(err)
					}
					return
				}
				released.Store(time.Now().UnixNano())
				if err := l.unlock(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	// gozk's lock nodes are "_c_<guid>-lock-<seq>", and so are ours
	// (Curator's naming): one marker counts both.
	inLine(b, direct, path, "lock-", n)
	close(start)
	// One round of N acquisitions before measuring: by its end every
	// contender has been woken once, so the entries of the start (N
	// children listings, which at N = 1000 take seconds to drain) are
	// done and each is in its steady loop.
	for range n + 1 {
		<-acquired
	}
	w0 := wireNow(p)
	pid := zktest.Shared(b, shared, sharedErr).PID()
	self0, server0, cpuOK := cpuTimes(pid)
	lat := make([]time.Duration, 0, 1024)
	for b.Loop() {
		lat = append(lat, <-acquired)
	}
	w := wireNow(p).sub(w0)
	if self1, server1, ok := cpuTimes(pid); ok && cpuOK && len(lat) > 0 {
		// CPU time, unlike the latencies, does not grow with the
		// machine's load: it tells the work an acquisition costs.
		ms(b, (self1-self0)/time.Duration(len(lat)), "clientcpu-ms/op")
		ms(b, (server1-server0)/time.Duration(len(lat)), "servercpu-ms/op")
	}
	close(stop)
	wg.Wait()
	w.report(b, len(lat))
	latencies(b, lat, 0.5, 0.99)
}

// sweepPeer runs ops operations of workload in one round of impl's driver
// (extra: its key=value arguments) and reports the mean time per operation
// by the driver's clock (ns/op) and the wire cost per operation.
func sweepPeer(b *testing.B, impl *peerImpl, workload string, ops int, extra ...string) {
	p, path := setup(b)
	// startDriver passes n=b.N; the n= after it, the count, is the one the
	// driver keeps.
	d := startDriver(b, impl, p, path, workload, append(extra, "n="+strconv.Itoa(ops))...)
	d.ready()
	w0 := wireNow(p)
	elapsed, done := d.round()
	w := wireNow(p).sub(w0)
	if done != ops {
		b.Fatalf("%s did %d operations, want %d", d.name, done, ops)
	}
	w.report(b, ops)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(ops), "ns/op")
	d.finish()
}

// BenchmarkSweepElection: N candidates, each on its own session; each
// operation closes the leader's session and measures the time until the
// next candidate's Campaign returns (its acknowledgement written): the
// failover (p50-ms, p90-ms; ns/op the mean). A replacement candidate joins
// between failovers so that N stay in line. The wire cost is the
// failover's. The peers (Curator's LeaderLatch, kazoo's Election) do the
// same in their drivers (the election workload with clients=N).
func BenchmarkSweepElection(b *testing.B) {
	for _, n := range sizes([]int{8, 64, 256}, 1000) {
		b.Run("impl=zkgen/n="+strconv.Itoa(n), func(b *testing.B) { sweepElection(b, n) })
		for _, impl := range peers {
			b.Run("impl="+impl.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				if n > peerCap {
					b.Skipf("%s runs up to N=%d on this machine", impl.name, peerCap)
				}
				sweepPeerRounds(b, impl, "election", []float64{0.5, 0.9}, "clients="+strconv.Itoa(n))
			})
		}
	}
}

func sweepElection(b *testing.B, n int) {
	srv := zktest.Shared(b, shared, sharedErr)
	_, path := setup(b)
	direct := gozk(b, srv.Addr()) // uncounted, to see the line
	// Each candidate has its own proxy, so that the failover's wire cost is
	// that of the two sessions it involves: the old leader's (its session's
	// close) and the new leader's (woken, it lists the candidates, takes
	// up the leadership and writes its acknowledgement), and not the other
	// candidates' (the replacement's entry, still listing the line when a
	// failover starts, would otherwise count at random).
	type candidate struct {
		s *runtime.Session
		p *zktest.Proxy
	}
	type elected struct {
		c  candidate
		at time.Time
	}
	var (
		mu  sync.Mutex
		all []candidate // guarded by mu
	)
	leaders := make(chan elected, n+1)
	var over atomic.Bool // the sessions close after the benchmark: no errors then
	defer over.Store(true)
	add := func() {
		p := zktest.NewProxy(b, srv.Addr())
		c := candidate{session(b, p.Addr()), p}
		mu.Lock()
		all = append(all, c)
		mu.Unlock()
		campaign(b, c.s, path, &over, func(at time.Time) {
			select {
			case leaders <- elected{c, at}:
			default: // elected while the sessions close at the end
			}
		})
	}
	many(n, func() struct{} { add(); return struct{}{} })
	leader := <-leaders
	inLine(b, direct, path, "latch-", n)
	var w wire
	var old candidate // the leader before leader, closed
	// account adds the last failover's cost: what old and leader sent and
	// read since the counts were reset before it. It runs after the next
	// candidate is in line, by when the new leader's follow-up (the watch
	// on its own node, set in the background) is done too.
	account := func() {
		w = wire{}.add(w, wireNow(old.p))
		w = wire{}.add(w, wireNow(leader.c.p))
	}
	lat := make([]time.Duration, 0, 64)
	for b.Loop() {
		if old.p != nil {
			account()
		}
		mu.Lock()
		for _, c := range all {
			c.p.ResetCounts()
		}
		mu.Unlock()
		t0 := time.Now()
		old = leader.c
		leader.c.s.Close()
		leader = <-leaders
		lat = append(lat, leader.at.Sub(t0))
		b.StopTimer()
		add()
		inLine(b, direct, path, "latch-", n)
		b.StartTimer()
	}
	account()
	leader.c.s.Close()
	w.report(b, len(lat))
	latencies(b, lat, 0.5, 0.9)
}

// sweepPeerRounds runs the rounds b.Loop asks for of impl's workload, one
// operation (a failover, a change) each, and reports their mean (ns/op),
// the percentiles pcts and the wire cost per round, all of the driver's
// sessions counted (extra: its key=value arguments).
func sweepPeerRounds(b *testing.B, impl *peerImpl, workload string, pcts []float64, extra ...string) {
	p, path := setup(b)
	// The driver is told of more rounds than the loop runs; finish tells
	// it to quit while it waits for the next.
	d := startDriver(b, impl, p, path, workload, append(extra, "n=1000000")...)
	var w wire
	lat := make([]time.Duration, 0, 64)
	for b.Loop() {
		b.StopTimer()
		d.ready()
		b.StartTimer()
		w0 := wireNow(p)
		el, _ := d.round()
		w = wire{}.add(w, wireNow(p).sub(w0))
		lat = append(lat, el)
	}
	w.report(b, len(lat))
	latencies(b, lat, pcts...)
	d.finish()
}

// BenchmarkSweepGroup: a group of N members and a watcher (Group.Watch) on
// its own session; each operation is a change (a member joins, then the
// next operation it leaves) and measures the time from the Join or Leave
// call until the watcher's list has the new size (p50-ms, p99-ms; ns/op
// the mean). The members' sessions (N members on up to 16 sessions; two
// handles on one session are two members) reach the server directly, so
// the wire cost per change is the watcher's alone. The peers do the same
// in their drivers (the group workload): Curator's watcher is a
// CuratorCache on the directory, kazoo's a ChildrenWatch, the members
// plain ephemeral nodes (Curator; GroupMember's node) or Party members
// (kazoo).
func BenchmarkSweepGroup(b *testing.B) {
	for _, n := range sizes([]int{10, 100, 1000}, 10000) {
		b.Run("impl=zkgen/n="+strconv.Itoa(n), func(b *testing.B) { sweepGroup(b, n) })
		for _, impl := range peers {
			b.Run("impl="+impl.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				direct := zktest.Shared(b, shared, sharedErr).Addr()
				sweepPeerRounds(b, impl, "group", []float64{0.5, 0.99},
					"members="+strconv.Itoa(n), "members_zk="+direct)
			})
		}
	}
}

func sweepGroup(b *testing.B, n int) {
	p, path := setup(b)
	addr := zktest.Shared(b, shared, sharedErr).Addr()
	ctx := context.Background()
	members := many(min(n, 16), func() *runtime.Session { return session(b, addr) })
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; j < n; j += len(members) {
				g := runtime.NewGroup(members[i], runtime.At(path), runtime.StringCodec())
				if _, err := g.Join(ctx, "m"+strconv.Itoa(j)); err != nil {
					b.Error(err)
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	watcher := session(b, p.Addr())
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lists := runtime.NewGroup(watcher, runtime.At(path), runtime.StringCodec()).Watch(wctx)
	// seen waits until the watcher's list has k members.
	seen := func(k int) time.Time {
		for l := range lists {
			if l.Err != nil {
				b.Fatal(l.Err)
			}
			if len(l.Members) == k {
				return time.Now()
			}
		}
		b.Fatal("the watch ended")
		return time.Time{}
	}
	seen(n)
	g := runtime.NewGroup(members[0], runtime.At(path), runtime.StringCodec())
	var m *runtime.Membership[string]
	var w wire
	lat := make([]time.Duration, 0, 64)
	for b.Loop() {
		w0 := wireNow(p)
		t0 := time.Now()
		want := n
		if m == nil {
			var err error
			if m, err = g.Join(ctx, "changing"); err != nil {
				b.Fatal(err)
			}
			want = n + 1
		} else {
			if err := m.Leave(ctx); err != nil {
				b.Fatal(err)
			}
			m = nil
		}
		lat = append(lat, seen(want).Sub(t0))
		w = wire{}.add(w, wireNow(p).sub(w0))
	}
	w.report(b, len(lat))
	latencies(b, lat, 0.5, 0.99)
}
