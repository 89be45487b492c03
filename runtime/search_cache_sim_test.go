package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/simsearch"
)

// The cache workload: writers create, set and delete the instances of
// /cache/{k} (five keys; every value written once), directly with
// go-zookeeper (each request taking its turn: runtime.Await), under
// random faults; readers each run a cache on their
// successive sessions (as under Supervise) and read its events. Checked,
// as docs/caches.md promises:
//
//   - the cache never shows a state the server never had: an Added or
//     Changed event's value was written to its path;
//   - an instance never goes back: per path, the (Czxid, Mzxid) of its
//     Added and Changed events only grow (a node created again has a
//     greater Czxid);
//   - it converges: once the faults stop and a last value is written,
//     each cache's Sync returns and its contents are the tree's.
func cacheSearch(r *searchRun) {
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const root = "/cache"
	writers := max(1, r.Config.Procs/2)
	readers := max(1, r.Config.Procs-writers)
	cs := &cacheCheck{r: r, written: map[string]map[string]bool{}}
	caches := make([]*strCacheStop, readers)
	for j := range readers {
		caches[j] = cs.reader(ctx, writers+j, root)
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs.writer(ctx, i, root)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		r.Stall("the writers did not finish")
	}
	r.Quiet(root, 0)
	cs.write(ctx, -1, r.Session(-3), root+"/final", "final", false)
	for j, c := range caches {
		cs.converged(ctx, writers+j, c.cache, root)
		c.stop()
	}
	r.Finish(root, 10*time.Second, root, root+"/*")
}

// strCacheStop is a reader's cache and what stops its runs.
type strCacheStop struct {
	cache *strCache
	stop  func()
}

// cacheCheck is the cache workload's record.
type cacheCheck struct {
	r       *searchRun
	mu      sync.Mutex
	written map[string]map[string]bool // the values written (or tried) to each path
}

// writer runs writer who's operations.
func (cs *cacheCheck) writer(ctx context.Context, who int, root string) {
	w := cs.r.Session(who)
	rng := cs.r.Rand(who)
	for n := 0; n < cs.r.Config.Ops && ctx.Err() == nil; n++ {
		p := fmt.Sprintf("%s/k%d", root, rng.IntN(5))
		cs.write(ctx, who, w, p, fmt.Sprintf("w%d-%d", who, n), rng.IntN(4) == 0)
	}
}

// write sets (or creates) path to v, or deletes it; its outcome may be
// unknown, so v counts as written before the request is sent.
func (cs *cacheCheck) write(ctx context.Context, who int, w *simsearch.Session, path, v string, del bool) {
	s, err := w.Get(ctx)
	if err != nil {
		return
	}
	// Each request through runtime.Await, which takes the goroutine's
	// turn on the simulated server: sent straight on the connection, a
	// writer's request went out before its connection's cut was known or
	// after, as the scheduler ran the two (cache seed=500153053 in a
	// search that ran every seed twice).
	if del {
		_, err = runtime.Await(ctx, s, func() (struct{}, error) { return struct{}{}, s.Conn().Delete(path, -1) })
		cs.r.Event(who, "delete %s: %v", path, err)
		return
	}
	cs.mu.Lock()
	if cs.written[path] == nil {
		cs.written[path] = map[string]bool{}
	}
	cs.written[path][v] = true
	cs.mu.Unlock()
	if _, err = runtime.Await(ctx, s, func() (*zk.Stat, error) { return s.Conn().Set(path, []byte(v), -1) }); errors.Is(err, zk.ErrNoNode) {
		_, err = runtime.Await(ctx, s, func() (string, error) { return s.Conn().Create(path, []byte(v), 0, zk.WorldACL(zk.PermAll)) })
	}
	cs.r.Event(who, "write %s=%s: %v", path, v, err)
}

// reader starts reader who's cache, run on its successive sessions, and
// checks its events.
func (cs *cacheCheck) reader(ctx context.Context, who int, root string) *strCacheStop {
	c, err := runtime.NewCache(runtime.TemplateAt(root).Str("k"), runtime.PathKey, runtime.StringCodec())
	if err != nil {
		cs.r.Fatalf("%v", err)
	}
	rctx, stop := context.WithCancel(ctx)
	w := cs.r.Session(who)
	go func() {
		for rctx.Err() == nil {
			s, err := w.Get(rctx)
			if err != nil {
				continue
			}
			err = c.Run(rctx, s)
			cs.r.Event(who, "cache run on session %x: %v", s.ID(), err)
			if errors.Is(err, runtime.ErrCacheFull) || errors.Is(err, runtime.ErrCacheRunning) {
				cs.r.Violate("the cache runs", "p%d's cache: %v", who, err)
				return
			}
		}
	}()
	go cs.check(rctx, who, c)
	return &strCacheStop{cache: c, stop: stop}
}

// check reads c's events and checks each against the record.
func (cs *cacheCheck) check(ctx context.Context, who int, c *strCache) {
	type rev struct{ c, m int64 }
	last := map[string]rev{}
	for ev := range c.Events(ctx) {
		cs.r.Event(who, "cache %v %s=%s", ev.Kind, ev.Path, ev.Value)
		if ev.Kind != runtime.CacheAdded && ev.Kind != runtime.CacheChanged {
			continue
		}
		cs.mu.Lock()
		ok := cs.written[ev.Path][ev.Value]
		cs.mu.Unlock()
		if !ok {
			cs.r.Violate("the cache shows only states the server had", "p%d's cache shows %s=%q, never written", who, ev.Path, ev.Value)
		}
		now, was := rev{ev.Stat.Czxid, ev.Stat.Mzxid}, last[ev.Path]
		if now.c < was.c || now.c == was.c && now.m <= was.m {
			cs.r.Violate("an instance never goes back", "p%d's cache: %v %s at czxid %#x mzxid %#x after czxid %#x mzxid %#x",
				who, ev.Kind, ev.Path, now.c, now.m, was.c, was.m)
		}
		last[ev.Path] = now
	}
}

// converged syncs reader who's cache and checks its contents against the
// tree.
func (cs *cacheCheck) converged(ctx context.Context, who int, c *strCache, root string) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.Sync(sctx); err != nil {
		cs.r.Violate("the cache converges", "p%d's Sync without faults: %v", who, err)
		return
	}
	want := map[string]string{}
	for _, n := range cs.r.Walk(root) {
		if n.Path != root {
			want[n.Path] = n.Data
		}
	}
	snap, _ := c.Snapshot()
	got := map[string]string{}
	for _, e := range snap.Entries {
		got[e.Path] = e.Value
	}
	if !maps.Equal(got, want) {
		cs.r.Violate("the cache converges", "p%d's cache holds %v after Sync; the tree holds %v", who, got, want)
	}
}
