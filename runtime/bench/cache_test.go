package bench

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// BenchmarkCache measures a mirror of n instances (issue 45): zkgen's
// runtime.Cache, Curator's CuratorCache and kazoo's TreeCache, each on its
// own session through its own counting proxy, on one tree of n nodes
// (/…/n-000000 …, 32 bytes of data each) written once per size. For each
// it reports:
//
//   - the initial load: load-s (from the cache's start until it says it
//     is loaded: zkgen's Sync, Curator's initialized, kazoo's
//     INITIALIZED), load-req and load-kB (requests sent, bytes the server
//     sent back);
//   - memory: B/node, what holding the cache took over the process's
//     memory without it, per node (Go: heap after a collection; Java:
//     used heap after full collections; Python: resident memory);
//   - cacheChanges changes, each a set of one node's data by a writer
//     session of its own (not counted: it talks to the server directly),
//     timed until the cache's reader sees the new value: change-p50-ms,
//     change-p99-ms, change-req and change-B (per change);
//   - reconnect-ms: the proxy cuts the cache's connection, the writer sets
//     cacheSpread nodes spread over the tree at once, and the time until
//     the cache shows them all (a resync goes through the tree: the last
//     of them shows about when the cache is current again); expiry-ms:
//     the same after the cache's session is expired (reconnect-req and
//     expiry-req count the requests of each).
//
// Sub-benchmarks are n=<n>/impl=<impl>: the impls of one size run one after
// the other, on the same server and tree. Run with -benchtime 1x; each
// iteration is the whole sequence. A peer that cannot load a size is
// skipped with what happened.
func BenchmarkCache(b *testing.B) {
	for _, n := range []int{1000, 10_000, 100_000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			base := cacheTree(b, n)
			b.Run("impl=zkgen", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					zkgenCache(b, base, n).report(b, n)
				}
			})
			for _, impl := range peers {
				b.Run("impl="+impl.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						peerCache(b, impl, base, n).report(b, n)
					}
				})
			}
		})
	}
}

// cacheChanges is the number of changes timed per run.
const cacheChanges = 200

// cacheValue is the data a run's r-th change writes (32 bytes; 0 is the
// tree's first value). The drivers write the same bytes.
func cacheValue(r int) string { return fmt.Sprintf("v%08d", r) + strings.Repeat("x", 23) }

// cacheSpread is the number of nodes a round after a fault sets.
const cacheSpread = 10

// cacheNodes are the paths of the nodes the r-th round of a run sets: one
// for a change (r <= cacheChanges), cacheSpread spread over the tree after
// a fault. The drivers set the same.
func cacheNodes(base string, n, r int) []string {
	k := 1
	if r > cacheChanges {
		k = cacheSpread
	}
	var ps []string
	for j := 0; j < k; j++ {
		ps = append(ps, fmt.Sprintf("%s/n-%06d", base, (r*7919+j*(n/k))%n))
	}
	return ps
}

var (
	cacheTreesMu sync.Mutex
	cacheTrees   = map[int]string{}
)

// cacheTree returns the base of a tree of n nodes on the shared server,
// writing it on first use (in multis of 1000 creates, directly).
func cacheTree(b *testing.B, n int) string {
	cacheTreesMu.Lock()
	defer cacheTreesMu.Unlock()
	if base, ok := cacheTrees[n]; ok {
		return base
	}
	c := gozk(b, zktest.Shared(b, shared, sharedErr).Addr())
	base := fmt.Sprintf("/bench/cache-%d", n)
	for _, p := range []string{"/bench", base} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i += 1000 {
		var ops []any
		for j := i; j < min(n, i+1000); j++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/n-%06d", base, j), Data: []byte(cacheValue(0)), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := c.Multi(ops...); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			b.Fatal(err)
		}
	}
	cacheTrees[n] = base
	return base
}

// cacheFigures are one run's measures.
type cacheFigures struct {
	load              time.Duration
	loadReq, loadRead int64
	mem               int64 // bytes the cache took
	changes           []time.Duration
	chReq, chRead     int64
	reconnect, expiry time.Duration
	recReq, expReq    int64
}

func (f cacheFigures) report(b *testing.B, n int) {
	b.ReportMetric(f.load.Seconds(), "load-s")
	b.ReportMetric(float64(f.loadReq), "load-req")
	b.ReportMetric(float64(f.loadRead)/1000, "load-kB")
	b.ReportMetric(float64(f.mem)/float64(n), "B/node")
	k := len(f.changes)
	ms(b, percentile(f.changes, 0.5), "change-p50-ms")
	ms(b, percentile(f.changes, 0.99), "change-p99-ms")
	b.ReportMetric(float64(f.chReq)/float64(k), "change-req")
	b.ReportMetric(float64(f.chRead)/float64(k), "change-B")
	ms(b, f.reconnect, "reconnect-ms")
	b.ReportMetric(float64(f.recReq), "reconnect-req")
	ms(b, f.expiry, "expiry-ms")
	b.ReportMetric(float64(f.expReq), "expiry-req")
	b.ReportMetric(float64(f.load.Nanoseconds()), "ns/op")
}

// phase counts a proxy's requests and bytes read over part of a run.
type phase struct {
	p    *zktest.Proxy
	last zktest.Counts
}

func (ph *phase) start() { ph.last = ph.p.Counts() }

// stop returns the requests and bytes read since start.
func (ph *phase) stop() (req, read int64) {
	c := ph.p.Counts()
	return c.Total() - ph.last.Total(), c.BytesRead - ph.last.BytesRead
}

// expireVia expires the one session established through p (the cache's).
// The proxy holds the client's new connections meanwhile: a client that
// dials again at once when the expiry's attachment drops its connection
// would otherwise take its session back from the attachment.
func expireVia(b *testing.B, p *zktest.Proxy, id int64) {
	b.Helper()
	s, ok := p.Session(id)
	if !ok {
		b.Fatalf("proxy saw no session 0x%x", id)
	}
	p.Pause(true)
	defer p.Pause(false)
	zktest.ExpireSession(b, []string{p.Target()}, s.ID, s.Passwd)
}

// heapInUse is the heap's live bytes after a collection.
func heapInUse() int64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// zkgenCache runs the sequence on a runtime.Cache of base/{name}, run on
// its sessions by runtime.Supervise, as docs/caches.md has it.
func zkgenCache(b *testing.B, base string, n int) cacheFigures {
	p, _ := setup(b)
	w := gozk(b, p.Target())
	c, err := runtime.NewCache(runtime.TemplateAt(base).Str("name"), runtime.PathKey, runtime.StringCodec())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sessions, gate, done := make(chan *runtime.Session, 4), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = runtime.Supervise(ctx, []string{p.Addr()}, func(ctx context.Context, s *runtime.Session) error {
			sessions <- s
			select { // the first run waits for the clock
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			return c.Run(ctx, s)
		}, runtime.WithSessionTimeout(10*time.Second))
	}()
	defer func() { cancel(); <-done }()
	first := <-sessions
	var f cacheFigures
	ph := &phase{p: p}
	mem := heapInUse()
	ph.start()
	t0 := time.Now()
	close(gate)
	if err := c.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	f.load = time.Since(t0)
	f.loadReq, f.loadRead = ph.stop()
	f.mem = heapInUse() - mem
	if c.Len() != n {
		b.Fatalf("cache of %d nodes, want %d", c.Len(), n)
	}
	seen := changesSeen(ctx, c)
	change := func(r int) time.Duration { return zkgenChange(b, w, seen, cacheNodes(base, n, r), cacheValue(r)) }
	ph.start()
	for r := 1; r <= cacheChanges; r++ {
		f.changes = append(f.changes, change(r))
	}
	f.chReq, f.chRead = ph.stop()
	ph.start()
	p.CutAll()
	f.reconnect = change(cacheChanges + 1)
	f.recReq, _ = ph.stop()
	ph.start()
	expireVia(b, p, first.ID())
	f.expiry = change(cacheChanges + 2)
	f.expReq, _ = ph.stop()
	return f
}

// changesSeen returns "path=value" for each change c's reader takes, from
// the first Synced on (the Added events of the load are read before it
// returns).
func changesSeen(ctx context.Context, c *runtime.Cache[string, string]) <-chan string {
	out, synced := make(chan string, 16), make(chan struct{})
	evs := c.Events(ctx)
	go func() {
		for ev := range evs {
			switch ev.Kind {
			case runtime.CacheSynced:
				if synced != nil {
					close(synced)
					synced = nil
				}
			case runtime.CacheChanged:
				select {
				case out <- ev.Key + "=" + ev.Value:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	<-synced
	return out
}

// zkgenChange sets paths to v through w and returns the time until seen
// has given them all.
func zkgenChange(b *testing.B, w *zk.Conn, seen <-chan string, paths []string, v string) time.Duration {
	b.Helper()
	t0 := time.Now()
	want := map[string]bool{}
	for _, p := range paths {
		if _, err := w.Set(p, []byte(v), -1); err != nil {
			b.Fatal(err)
		}
		want[p+"="+v] = true
	}
	timeout := time.After(peerWait)
	for len(want) > 0 {
		select {
		case s := <-seen:
			delete(want, s)
		case <-timeout:
			b.Fatalf("%v not seen within %v", want, peerWait)
		}
	}
	return time.Since(t0)
}

// peerCache runs the sequence in impl's driver (workload cache).
func peerCache(b *testing.B, impl *peerImpl, base string, n int) cacheFigures {
	p, _ := setup(b)
	d := startDriver(b, impl, p, base, "cache", "nodes="+strconv.Itoa(n), "changes="+strconv.Itoa(cacheChanges), "spread="+strconv.Itoa(cacheSpread),
		"writer_zk="+p.Target(), "load_timeout_s="+strconv.Itoa(int(peerWait.Seconds())-30))
	var f cacheFigures
	ph := &phase{p: p}
	d.ready()
	ph.start()
	res, err := d.cacheRound()
	if err != nil {
		b.Skipf("%s did not load %d nodes: %v; its output:\n%s", impl.name, n, err, d.log.Tail(10))
	}
	f.load = time.Duration(res["ns"])
	f.loadReq, f.loadRead = ph.stop()
	f.mem = res["mem"]
	if res["n"] != int64(n) {
		b.Skipf("%s said it was loaded holding %d of the %d nodes (in %v, %d requests); its output:\n%s",
			impl.name, res["n"], n, f.load, f.loadReq, d.log.Tail(10))
	}
	round := func(before func()) (time.Duration, int64, int64) {
		d.ready()
		ph.start()
		if before != nil {
			before()
		}
		res, err := d.cacheRound()
		if err != nil {
			b.Fatalf("%s: %v; its output:\n%s", impl.name, err, d.log.Tail(30))
		}
		req, read := ph.stop()
		return time.Duration(res["ns"]), req, read
	}
	for r := 1; r <= cacheChanges; r++ {
		el, req, read := round(nil)
		f.changes = append(f.changes, el)
		f.chReq, f.chRead = f.chReq+req, f.chRead+read
	}
	f.reconnect, f.recReq, _ = round(p.CutAll)
	f.expiry, f.expReq, _ = round(func() {
		ss := p.Sessions()
		if len(ss) == 0 {
			b.Fatal("no session through the proxy")
		}
		expireVia(b, p, ss[len(ss)-1].ID)
	})
	d.finish()
	return f
}

// cacheRound runs one round and returns its result's fields, or the
// error the driver gave, or that it exited or gave none within peerWait
// (it is then killed).
func (d *driver) cacheRound() (map[string]int64, error) {
	d.b.Helper()
	d.send("go")
	select {
	case l, ok := <-d.lines:
		if !ok {
			<-d.done
			return nil, fmt.Errorf("exited (%v)", d.err)
		}
		f, rest, _ := strings.Cut(l, " ")
		if f == "error" {
			return nil, errors.New(rest)
		}
		res := map[string]int64{}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				d.b.Fatalf("%s: bad result %q", d.name, kv)
			}
			res[k] = x
		}
		return res, nil
	case <-time.After(peerWait):
		d.kill()
		return nil, fmt.Errorf("no result within %v; killed", peerWait)
	}
}
