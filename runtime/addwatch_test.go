package runtime_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// listen collects the notifications below root that the session passes to
// Listen callbacks, as "Type path".
func listen(t *testing.T, s *runtime.Session, root string) <-chan string {
	got := make(chan string, 100)
	remove := runtime.OpsOf(s).Listen(func(ev zk.Event) {
		if ev.Type != zk.EventSession && len(ev.Path) >= len(root) && ev.Path[:len(root)] == root {
			select {
			case got <- fmt.Sprint(ev.Type, " ", ev.Path[len(root):]):
			default:
				t.Errorf("listener: buffer full at %v", ev)
			}
		}
	})
	t.Cleanup(remove)
	return got
}

// TestAddWatchRecursive: one persistent recursive watch, sent by the
// session on go-zookeeper's connection, reports every creation, data
// change and deletion at any depth below its path (which did not exist
// when it was added), in order; and the reply to SyncZxid comes only after
// the notifications of every change made before it were handed to the
// Listen callbacks, with a zxid at least that of the last change.
func TestAddWatchRecursive(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 30*time.Second)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	got := listen(t, s, root)
	if _, err := runtime.OpsOf(s).AddWatchRecursive(ctx, root); err != nil {
		t.Fatal(err)
	}
	makeDirs(t, w, "/zkgen-test", root, root+"/a", root+"/a/b")
	st, err := w.Conn().Set(root+"/a/b", []byte("x"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Conn().Delete(root+"/a/b", -1); err != nil {
		t.Fatal(err)
	}
	z, err := runtime.OpsOf(s).SyncZxid(ctx, root)
	if err != nil || z < st.Mzxid {
		t.Fatalf("SyncZxid = %#x, %v; want at least the set's %#x", z, err, st.Mzxid)
	}
	want := []string{"EventNodeCreated ", "EventNodeCreated /a", "EventNodeCreated /a/b", "EventNodeDataChanged /a/b", "EventNodeDeleted /a/b"}
	if len(got) != len(want) {
		t.Fatalf("%d notifications handed over when the sync's reply came, want %d", len(got), len(want))
	}
	for i, wv := range want {
		if g := <-got; g != wv {
			t.Errorf("notification %d: %q, want %q", i, g, wv)
		}
	}
}

// TestAddWatchRefused: a server that does not know addWatch (ZooKeeper
// 3.5, played by the proxy) answers ErrUnimplemented and closes the
// connection; the session reconnects and lives on.
func TestAddWatchRefused(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 30*time.Second)
	p := zktest.NewProxy(t, srv.Addr())
	s := connect(t, viaProxy(p))
	p.Refuse(zktest.OpAddWatch, true)
	before := p.Accepted()
	if _, err := runtime.OpsOf(s).AddWatchRecursive(ctx, "/"); !errors.Is(err, runtime.ErrUnimplemented) {
		t.Fatalf("AddWatchRecursive on a 3.5 server: %v, want ErrUnimplemented", err)
	}
	if _, err := runtime.OpsOf(s).Children(ctx, "/"); err != nil || s.Err() != nil {
		t.Fatalf("session after the refusal: %v, %v", err, s.Err())
	}
	if p.Accepted() == before {
		t.Error("the connection was not closed after the refusal")
	}
}
