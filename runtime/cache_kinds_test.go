package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// runKindCache runs a kind's cache on s until the test ends.
func runKindCache(t *testing.T, run func(context.Context, *runtime.Session) error, s *runtime.Session) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx, s)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A lock's cache leaves out the children of a lock directory that are not
// contenders of its family (docs/caches.md), and a kazoo-layout group's
// the children without kazoo Party's marker.
func TestKindCachesLeaveForeignChildrenOut(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/locks/1/foreign": "x", root + "/party/g/someone": "y"})

	locks, err := runtime.NewLockCache(runtime.TemplateAt(root+"/locks").Int("n"), func(p runtime.Params) int { return p.Int(0) }, runtime.LayoutCurator)
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, locks.Run, s)
	l := runtime.NewLock(w, runtime.At(root+"/locks").Int("n", 1))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := locks.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st, ok := locks.Get(1)
	if !ok || len(st.Holders) != 1 || len(st.Waiters) != 0 {
		t.Fatalf("lock 1 with a foreign child: %+v (ok %v); want one holder, no waiter", st, ok)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := locks.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st, ok := locks.Get(1); ok {
		t.Fatalf("lock 1 with only a foreign child is there: %+v", st)
	}

	party, err := runtime.NewGroupCache(runtime.TemplateAt(root+"/party").Str("g"), func(p runtime.Params) string { return p.Str(0) },
		runtime.StringCodec(), runtime.LayoutKazoo)
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, party.Run, s)
	if _, err := w.Conn().Create(root+"/party/g/abc__party__", []byte("member"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := party.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	gs, ok := party.Get("g")
	if !ok || len(gs.Members) != 1 || gs.Members[0].Value != "member" {
		t.Fatalf("kazoo party g: %+v (ok %v); want the one member", gs, ok)
	}
}

// An election's cache counts an acknowledgement whose candidate is gone
// as no leader, as State does, and follows a kazoo-layout election's
// candidates (docs/election.md, cache).
func TestElectionCacheStaleAckAndKazoo(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/e/x/leader": "{\"epoch\":3,\"candidate\":\"gone\",\"session\":\"0x1\"}\nold"})
	key := func(p runtime.Params) string { return p.Str(0) }
	cache, err := runtime.NewElectionCache(runtime.TemplateAt(root+"/e").Str("name"), key, runtime.StringCodec(), runtime.LayoutKazoo)
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, cache.Run, s)
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st, ok := cache.Get("x"); !ok || st.Leader.Elected || len(st.Candidates) != 0 {
		t.Fatalf("a stale acknowledgement: %+v (ok %v); want no leader, no candidate", st, ok)
	}
	e := runtime.NewElection(w, runtime.At(root+"/e").Str("name", "y"), runtime.StringCodec(), runtime.WithLayout(runtime.LayoutKazoo))
	l, err := e.Campaign(ctx, "py")
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get("y")
	if !ok || !st.Leader.Elected || st.Leader.Payload != "py" || len(st.Candidates) != 1 || st.Candidates[0].Node != l.Node() {
		t.Fatalf("a kazoo election: %+v (ok %v); want py leading, its one candidate %s", st, ok, l.Node())
	}
}

// kindCache is what the kinds' caches have in common that their tests
// use.
type kindCache[K comparable, V any] interface {
	Run(ctx context.Context, s *runtime.Session) error
	Sync(ctx context.Context) error
	Get(k K) (V, bool)
	Events(ctx context.Context) <-chan runtime.CacheEvent[K, V]
}

// awaitKind reads the cache's events until instance k's state (and
// whether it is there) satisfies ok, then syncs the cache and returns
// the state; what is short of ok is reported when ctx ends.
func awaitKind[K comparable, V any](t *testing.T, ctx context.Context, c kindCache[K, V], evs <-chan runtime.CacheEvent[K, V], k K,
	what string, ok func(v V, there bool) bool) V {
	t.Helper()
	for v, there := c.Get(k); !ok(v, there); v, there = c.Get(k) {
		select {
		case <-evs:
		case <-ctx.Done():
			t.Fatalf("the cache never showed %s: it shows (there %v) %+v", what, there, v)
		}
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	v, _ := c.Get(k)
	return v
}

// expireKindCache runs c under Supervise through a proxy and returns a
// function that expires the cache's session, calls meanwhile while the
// cache has no session (the proxy paused), lets it reconnect and returns
// once its readers got a Gap and then Synced.
func expireKindCache[K comparable, V any](t *testing.T, ctx context.Context, srv *zktest.Server, c kindCache[K, V]) (expire func(meanwhile func())) {
	p := zktest.NewProxy(t, srv.Addr())
	sessions, runs := superviseVia(ctx, p, c.Run)
	first := <-sessions
	return func(meanwhile func()) {
		t.Helper()
		evs := c.Events(ctx)
		p.Pause(true)
		expireViaProxy(t, p, srv.Servers(), first.ID())
		if err := <-runs; !errors.Is(err, runtime.ErrSessionExpired) {
			t.Fatalf("Run on the expired session: %v", err)
		}
		meanwhile()
		p.Pause(false)
		if second := <-sessions; second.ID() == first.ID() {
			t.Fatal("no new session")
		}
		for gap := false; ; {
			select {
			case ev := <-evs:
				gap = gap || ev.Kind == runtime.CacheGap
				if gap && ev.Kind == runtime.CacheSynced {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no gap then synced after the expiry: %v", ctx.Err())
			}
		}
	}
}
