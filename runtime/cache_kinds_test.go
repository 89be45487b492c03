package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
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
