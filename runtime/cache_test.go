package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

// Helpers of the cache tests (cache_test.go, cache_fault_test.go).

// strCache is a cache of string payloads keyed by path.
type strCache = runtime.Cache[string, string]

// newStrCache returns a cache of tmpl's instances, keyed by path.
func newStrCache(t *testing.T, tmpl runtime.Template, opts ...runtime.CacheOption) *strCache {
	t.Helper()
	c, err := runtime.NewCache(tmpl, runtime.PathKey, runtime.StringCodec(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runCache runs c on s until the test ends (or stop is called); errc
// gets what Run returned.
func runCache[K comparable, T any](t *testing.T, c *runtime.Cache[K, T], s *runtime.Session) (errc <-chan error, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch <- c.Run(ctx, s)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch, cancel
}

// eventLog records a reader's events.
type eventLog[K comparable, T any] struct {
	mu   sync.Mutex
	evs  []runtime.CacheEvent[K, T]
	more chan struct{} // closed and replaced at each event
}

// record reads c's events for the rest of the test.
func record[K comparable, T any](t *testing.T, c *runtime.Cache[K, T]) *eventLog[K, T] {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &eventLog[K, T]{more: make(chan struct{})}
	evs := c.Events(ctx)
	go func() {
		for ev := range evs {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			close(l.more)
			l.more = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// await waits until ok holds of the events so far, and returns them.
func (l *eventLog[K, T]) await(t *testing.T, ctx context.Context, what string, ok func([]runtime.CacheEvent[K, T]) bool) []runtime.CacheEvent[K, T] {
	t.Helper()
	for {
		l.mu.Lock()
		evs, more := slices.Clone(l.evs), l.more
		l.mu.Unlock()
		if ok(evs) {
			return evs
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("never saw %s; events: %s", what, describe(evs))
		}
	}
}

// describe lists events as "kind path=value" (Gap and Synced alone).
func describe[K comparable, T any](evs []runtime.CacheEvent[K, T]) string {
	var b strings.Builder
	for _, ev := range evs {
		switch ev.Kind {
		case runtime.CacheGap, runtime.CacheSynced, runtime.CacheFailed:
			fmt.Fprintf(&b, "[%v] ", ev.Kind)
		default:
			fmt.Fprintf(&b, "%v %s=%v; ", ev.Kind, ev.Path, ev.Value)
		}
	}
	return b.String()
}

// kinds counts events of kind k.
func kinds[K comparable, T any](evs []runtime.CacheEvent[K, T], k runtime.CacheEventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// contents returns a snapshot's instances as path → value.
func contents(t *testing.T, c *strCache) map[string]string {
	t.Helper()
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range snap.Entries {
		out[e.Path] = e.Value
	}
	return out
}

// requireContents syncs c and fails unless it holds exactly want.
func requireContents(t *testing.T, ctx context.Context, c *strCache, want map[string]string) {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := contents(t, c); !maps.Equal(got, want) {
		t.Fatalf("cache holds %v\nwant %v", got, want)
	}
}

// put creates or sets each path (parents created) with its value.
func put(t *testing.T, s *runtime.Session, kv map[string]string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(kv)) {
		if _, err := s.Conn().Set(p, []byte(kv[p]), -1); err == nil {
			continue
		} else if !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		parts := strings.Split(p, "/")
		for i := 2; i < len(parts); i++ {
			makeDirs(t, s, strings.Join(parts[:i], "/"))
		}
		if _, err := s.Conn().Create(p, []byte(kv[p]), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCacheMirrorsInstances: a cache holds exactly the nodes its template
// matches (not the nodes on the way, not those whose segments it refuses,
// not those below an instance), follows their creation, change and
// deletion, tells a reader each with its version and zxid, and runs on one
// persistent watch.
func TestCacheMirrorsInstances(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{
		root + "/svc/a/shard/1": "a1", root + "/svc/a/shard/2": "a2", root + "/svc/b/shard/-3": "b-3",
		root + "/svc/a/shard/07": "not an int", root + "/svc/a/other/1": "other literal",
		root + "/svc/a/shard/1/child": "below an instance",
	})
	c := newStrCache(t, runtime.TemplateAt(root+"/svc").Str("name").Lit("shard").Int("n"))
	runCache(t, c, s)
	want := map[string]string{root + "/svc/a/shard/1": "a1", root + "/svc/a/shard/2": "a2", root + "/svc/b/shard/-3": "b-3"}
	requireContents(t, ctx, c, want)
	if c.Mode() != runtime.CachePersistent {
		t.Errorf("mode %v, want persistent", c.Mode())
	}
	e, ok := c.Get(root + "/svc/b/shard/-3")
	if !ok || e.Value != "b-3" || e.Err != nil || e.Stat.Mzxid == 0 {
		t.Errorf("Get: %+v %v", e, ok)
	}
	log := record(t, c)
	log.await(t, ctx, "the initial state", func(evs []runtime.CacheEvent[string, string]) bool {
		return kinds(evs, runtime.CacheSynced) == 1
	})
	st, err := w.Conn().Set(root+"/svc/a/shard/1", []byte("A1"), -1)
	if err != nil {
		t.Fatal(err)
	}
	deleteTree(t, w, root+"/svc/a/shard/2")
	put(t, w, map[string]string{root + "/svc/c/shard/9": "c9", root + "/svc/a/shard/1/child": "ignored"})
	want = map[string]string{root + "/svc/a/shard/1": "A1", root + "/svc/b/shard/-3": "b-3", root + "/svc/c/shard/9": "c9"}
	requireContents(t, ctx, c, want)
	evs := log.await(t, ctx, "three changes", func(evs []runtime.CacheEvent[string, string]) bool { return len(evs) >= 7 })
	got := describe(evs[4:])
	if got != fmt.Sprintf("changed %[1]s/svc/a/shard/1=A1; removed %[1]s/svc/a/shard/2=a2; added %[1]s/svc/c/shard/9=c9; ", root) {
		t.Errorf("events after the load: %s", got)
	}
	if ch := evs[4]; ch.Zxid != st.Mzxid || ch.Stat.Version != st.Version || ch.Key != root+"/svc/a/shard/1" {
		t.Errorf("changed event: zxid %#x version %d, want the set's %#x, %d", ch.Zxid, ch.Stat.Version, st.Mzxid, st.Version)
	}
	if snap, _ := c.Snapshot(); snap.Zxid < st.Mzxid || !snap.Synced {
		t.Errorf("snapshot zxid %#x (synced %v) after Sync, want at least %#x", snap.Zxid, snap.Synced, st.Mzxid)
	}
}

// TestCacheRemovalReadsNothing: on a persistent watch an instance's
// deletion is removed from the cache without a read (its notification
// says all there is), while a node deleted and created again before the
// cache took the deletion is read, and holds its new value.
func TestCacheRemovalReadsNothing(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/a": "a", root + "/b": "b", root + "/c": "c"})
	c := newStrCache(t, runtime.TemplateAt(root).Str("k"))
	runCache(t, c, s)
	requireContents(t, ctx, c, map[string]string{root + "/a": "a", root + "/b": "b", root + "/c": "c"})
	if c.Mode() != runtime.CachePersistent {
		t.Skipf("mode %v: removals are read in one-shot mode", c.Mode())
	}
	log := record(t, c)
	before := c.Stats()
	deleteTree(t, w, root+"/a")
	requireContents(t, ctx, c, map[string]string{root + "/b": "b", root + "/c": "c"})
	log.await(t, ctx, "a removed", func(evs []runtime.CacheEvent[string, string]) bool {
		return kinds(evs, runtime.CacheRemoved) == 1
	})
	if after := c.Stats(); after.Reads != before.Reads || after.Lists != before.Lists {
		t.Errorf("a removal cost %d reads and %d listings; want none",
			after.Reads-before.Reads, after.Lists-before.Lists)
	}
	// Deleted and created again in one multi: the deletion's notification
	// is followed by the creation's, and the node is read.
	if _, err := w.Conn().Multi(&zk.DeleteRequest{Path: root + "/b", Version: -1},
		&zk.CreateRequest{Path: root + "/b", Data: []byte("B"), Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatal(err)
	}
	requireContents(t, ctx, c, map[string]string{root + "/b": "B", root + "/c": "c"})
}

// TestCacheSyncReadsYourWrites: after Sync, the cache holds every write
// made before it, through another session.
func TestCacheSyncReadsYourWrites(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	c := newStrCache(t, runtime.TemplateAt(root).Str("k"))
	runCache(t, c, s)
	for i := range 50 {
		p := fmt.Sprintf("%s/k%d", root, i%5)
		put(t, w, map[string]string{p: fmt.Sprint(i)})
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if e, ok := c.Get(p); !ok || e.Value != fmt.Sprint(i) {
			t.Fatalf("write %d: after Sync the cache holds %q (%v)", i, e.Value, ok)
		}
	}
}

// TestCacheSlowReader: a reader that does not read while a node changes
// many times gets one event for it, the net change, with the number of
// changes folded; a node added and removed meanwhile is no event at all.
func TestCacheSlowReader(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/a": "0"})
	c := newStrCache(t, runtime.TemplateAt(root).Str("k"))
	runCache(t, c, s)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	evs := c.Events(ctx) // not read until the end
	for i := 1; i <= 20; i++ {
		put(t, w, map[string]string{root + "/a": fmt.Sprint(i)})
		if err := c.Sync(ctx); err != nil { // each change applied on its own
			t.Fatal(err)
		}
	}
	put(t, w, map[string]string{root + "/tmp": "x"})
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	deleteTree(t, w, root+"/tmp")
	put(t, w, map[string]string{root + "/zz-end": "end"})
	var got []runtime.CacheEvent[string, string]
	for ev := range evs {
		got = append(got, ev)
		if ev.Path == root+"/zz-end" {
			break
		}
	}
	if d := describe(got); d != fmt.Sprintf("added %[1]s/a=0; [synced] changed %[1]s/a=20; added %[1]s/zz-end=end; ", root) {
		t.Fatalf("slow reader got %s", d)
	}
	if got[2].Merged != 19 {
		t.Errorf("the change folds %d changes, want 19", got[2].Merged)
	}
	if n := c.Stats().Coalesced; n != 20 {
		t.Errorf("Stats().Coalesced = %d, want 20 (19 changes, one node added and removed)", n)
	}
}

// TestCacheMaxNodes: a cache over its bound stops with ErrCacheFull, holds
// no more than its bound, and says so to readers, Sync and Run.
func TestCacheMaxNodes(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/a": "", root + "/b": "", root + "/c": ""})
	c := newStrCache(t, runtime.TemplateAt(root).Str("k"), runtime.WithMaxNodes(3))
	errc, _ := runCache(t, c, s)
	requireContents(t, ctx, c, map[string]string{root + "/a": "", root + "/b": "", root + "/c": ""})
	log := record(t, c)
	put(t, w, map[string]string{root + "/d": ""})
	select {
	case err := <-errc:
		if !errors.Is(err, runtime.ErrCacheFull) {
			t.Fatalf("Run: %v, want ErrCacheFull", err)
		}
	case <-ctx.Done():
		t.Fatalf("Run goes on with %d nodes, over its bound", c.Len())
	}
	evs := log.await(t, ctx, "the failure", func(evs []runtime.CacheEvent[string, string]) bool {
		return kinds(evs, runtime.CacheFailed) == 1
	})
	if err := evs[len(evs)-1].Err; !errors.Is(err, runtime.ErrCacheFull) {
		t.Errorf("failed event: %v", err)
	}
	if err := c.Sync(ctx); !errors.Is(err, runtime.ErrCacheFull) {
		t.Errorf("Sync: %v", err)
	}
	if c.Len() != 3 {
		t.Errorf("the cache holds %d nodes, over its bound", c.Len())
	}
}

// TestCacheSubtree: WithSubtree reports each change of an instance's
// subtree, with the instance, in persistent mode: the instance's own, and
// those of nodes below it that the cache itself does not hold; nothing
// on the way to the instances or beside the template.
func TestCacheSubtree(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/locks/1": "", root + "/other/1": ""})
	var mu sync.Mutex
	var got []string
	c := newStrCache(t, runtime.TemplateAt(root).Lit("locks").Int("shard"), runtime.WithSubtree(func(inst, path string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, strings.TrimPrefix(inst, root)+" "+strings.TrimPrefix(path, root))
	}))
	runCache(t, c, s)
	requireContents(t, ctx, c, map[string]string{root + "/locks/1": ""})
	put(t, w, map[string]string{root + "/locks/1/c-1": "", root + "/locks/2": "", root + "/other/2": "", root + "/locks/x": ""})
	deleteTree(t, w, root+"/locks/1/c-1")
	requireContents(t, ctx, c, map[string]string{root + "/locks/1": "", root + "/locks/2": ""})
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/locks/1 /locks/1/c-1", "/locks/2 /locks/2", "/locks/1 /locks/1/c-1"}
	if !slices.Equal(got, want) {
		t.Errorf("subtree changes %q, want %q", got, want)
	}
}
