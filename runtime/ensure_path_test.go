package runtime_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A participant whose directory's parent exists creates the directory with
// one request, not one per path component (the parents are created
// bottom-up, only when the create says they are missing): a double barrier
// on a fresh round path under an existing parent. And a barrier whose two
// parents are missing creates them and is raised.
func TestEnsurePathBottomUp(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	admin := connect(t, srv.Servers())
	if err := runtime.NewBarrier(admin, runtime.At(root+"/up")).Raise(ctx); err != nil { // root exists now
		t.Fatal(err)
	}
	f := newFaulty(t, srv)
	f.p.ResetCounts()
	if err := runtime.NewDoubleBarrier(f.s, runtime.At(root+"/round-1"), 1).Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.p.Counts().Requests[zktest.OpCreateContainer]; got != 1 {
		t.Errorf("%d createContainer requests for a directory whose parent exists, want 1", got)
	}

	deep := root + "/a/b/barrier"
	if err := runtime.NewBarrier(f.s, runtime.At(deep)).Raise(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root + "/a", root + "/a/b", deep} {
		if ok, _, err := admin.Conn().Exists(p); err != nil || !ok {
			t.Errorf("%s: exists = %v, %v", p, ok, err)
		}
	}
	if _, err := admin.Conn().Create(root+"/a/b/child", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("create under the created parents: %v", err)
	}
}
