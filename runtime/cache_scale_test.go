package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// TestCache100kInstances: a cache with the default bound
// (runtime.DefaultMaxNodes, 100,000) loads 100,000 instances, stays
// exactly the tree through changes, a lost connection (cut again in the
// middle of its resync) and an expired session (changes, deletions and
// creations made while it had none), and stops with ErrCacheFull at the
// 100,001st. It writes 100,000 nodes and resyncs them four times: set
// ZKGEN_CACHE_100K=1 to run it (.ci/run does; it is left out of the
// race-detector suite for its time).
func TestCache100kInstances(t *testing.T) {
	if os.Getenv("ZKGEN_CACHE_100K") != "1" {
		t.Skip("set ZKGEN_CACHE_100K=1 to run (writes and resyncs 100,000 nodes)")
	}
	srv := server(t)
	ctx := testCtx(t, 10*time.Minute)
	p, w := zktest.NewProxy(t, srv.Addr()), connect(t, srv.Servers())
	root := testRoot(t)
	want := fillInstances(t, w, root, runtime.DefaultMaxNodes)
	c := newStrCache(t, runtime.TemplateAt(root).Str("k"))
	sessions, runs := superviseCache(t, ctx, c, p)
	first := <-sessions
	requireContents(t, ctx, c, want)
	change := func(round int) { // sets 100 instances, replaces 100 by others
		kv := map[string]string{}
		for i := 0; i < 100; i++ {
			gone := fmt.Sprintf("%s/n-%06d", root, round*100+i)
			delete(want, gone)
			deleteTree(t, w, gone)
			kv[fmt.Sprintf("%s/n-%06d", root, 50_000+round*1000+i*7)] = fmt.Sprintf("r%d", round)
			kv[fmt.Sprintf("%s/new-%d-%d", root, round, i)] = "new"
		}
		put(t, w, kv)
		maps.Copy(want, kv)
	}
	change(1)
	requireContents(t, ctx, c, want)

	p.Pause(true)
	p.CutAll()
	change(2)
	// A second cut in the middle of the resync: once the cache has listed
	// the base again, before it has read the instances the listing found
	// (their reads then fail, and the next resync reads them).
	var once sync.Once
	cutMid := make(chan struct{})
	runtime.OnCacheListed(func(path string) {
		if path == root {
			once.Do(func() { p.CutAll(); close(cutMid) })
		}
	})
	t.Cleanup(func() { runtime.OnCacheListed(nil) })
	p.Pause(false)
	<-cutMid
	runtime.OnCacheListed(nil)
	requireContents(t, ctx, c, want) // Sync waits for the resync

	p.Pause(true) // no session reaches the server until the changes are made
	expireViaProxy(t, p, srv.Servers(), first.ID())
	if err := <-runs; !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Run on the expired session: %v", err)
	}
	change(3)
	p.Pause(false)
	<-sessions
	requireContents(t, ctx, c, want)

	put(t, w, map[string]string{root + "/one-more": ""})
	if err := <-runs; !errors.Is(err, runtime.ErrCacheFull) {
		t.Fatalf("Run with %d instances: %v, want ErrCacheFull", len(want)+1, err)
	}
	if c.Len() != runtime.DefaultMaxNodes {
		t.Errorf("the cache holds %d nodes, want its bound %d", c.Len(), runtime.DefaultMaxNodes)
	}
}

// fillInstances creates root/n-000000 ... (n of them, data "0", in multis
// of 1000) and returns them as a cache's contents should be.
func fillInstances(t *testing.T, w *runtime.Session, root string, n int) map[string]string {
	t.Helper()
	put(t, w, map[string]string{root + "/n-000000": "0"})
	want := map[string]string{root + "/n-000000": "0"}
	for i := 1; i < n; i += 1000 {
		var ops []any
		for j := i; j < min(n, i+1000); j++ {
			p := fmt.Sprintf("%s/n-%06d", root, j)
			want[p] = "0"
			ops = append(ops, &zk.CreateRequest{Path: p, Data: []byte("0"), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := w.Conn().Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// superviseCache runs c under Supervise through p until the test ends;
// each new session goes to sessions, and what each Run returned to runs.
func superviseCache(t *testing.T, ctx context.Context, c *strCache, p *zktest.Proxy) (sessions <-chan *runtime.Session, runs <-chan error) {
	ss, rs := make(chan *runtime.Session, 64), make(chan error, 64)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runtime.Supervise(ctx, viaProxy(p), func(ctx context.Context, s *runtime.Session) error {
			ss <- s
			err := c.Run(ctx, s)
			rs <- err
			return err
		}, runtime.WithSessionTimeout(10*time.Second))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ss, rs
}

// expireViaProxy expires the session id, established through p.
func expireViaProxy(t *testing.T, p *zktest.Proxy, servers []string, id int64) {
	t.Helper()
	creds, ok := p.Session(id)
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	zktest.ExpireSession(t, servers, creds.ID, creds.Passwd)
}
