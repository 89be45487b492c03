package inspect

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// TestReapVanished: a node listed by reap but deleted before reap's delete
// comes is reported as vanished, not as removed and not silently dropped.
// The hook between listing and deleting makes the race happen every time.
func TestReapVanished(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := fmt.Sprintf("/zkgen-reap-%d", os.Getpid())
	s := parse(t, `version: 1
package: coord
root: `+root+`
resources:
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}
`)
	connect := func() *runtime.Session {
		sess, err := runtime.Connect(ctx, srv.Servers())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		return sess
	}
	a, b := connect(), connect()
	var held []*runtime.Lock
	for _, shard := range []string{"7", "8"} {
		l := runtime.NewLock(a, runtime.At(root+"/locks/orders/"+shard))
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	gone := held[0]
	node := func(l *runtime.Lock) string {
		hs, err := l.Holders(ctx)
		if err != nil || len(hs) != 1 {
			t.Fatalf("holders %v, %v", hs, err)
		}
		return hs[0].Node
	}
	goneNode, keptNode := node(held[0]), node(held[1])

	afterList = func(dir string) {
		if dir == root+"/locks/orders/7" {
			afterList = nil // once
			if err := gone.Unlock(ctx); err != nil {
				t.Errorf("unlock: %v", err)
			}
		}
	}
	t.Cleanup(func() { afterList = nil })

	// --path narrows to shard 7: shard 8's node is not touched.
	rs, err := Reap(ctx, b, s, ReapOptions{OlderThan: -time.Minute, Path: root + "/locks/orders/7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Contender.Node != goneNode || !rs[0].Vanished {
		t.Fatalf("reaped %+v, want %s vanished", rs, goneNode)
	}
	if line := ReapLine("removed", rs[0]); !strings.HasPrefix(line, "vanished "+goneNode+"  order_lock (lock)") ||
		!strings.HasSuffix(line, "(gone before reap deleted it: released, or its session ended)") {
		t.Errorf("line %q", line)
	}
	if ok, err := b.Exists(ctx, keptNode); err != nil || !ok {
		t.Fatalf("shard 8's node, outside --path: exists %v, %v", ok, err)
	}

	// Without a path, shard 8's holder is removed (not vanished).
	rs, err = Reap(ctx, b, s, ReapOptions{OlderThan: -time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Contender.Node != keptNode || rs[0].Vanished {
		t.Fatalf("reaped %+v, want %s removed", rs, keptNode)
	}
	<-held[1].Lost()
}

func TestUnder(t *testing.T) {
	for _, c := range []struct {
		p, prefix string
		want      bool
	}{
		{"/a/b", "/a", true}, {"/a/b", "/a/", true}, {"/a", "/a", true}, {"/ab", "/a", false},
		{"/a/70", "/a/7", false}, {"/a/7/x", "/a/7", true}, {"/a", "/a/b", false}, {"/a", "/", true},
	} {
		if got := under(c.p, c.prefix); got != c.want {
			t.Errorf("under(%q, %q) = %v", c.p, c.prefix, got)
		}
	}
}
