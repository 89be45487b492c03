package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// zkgen's own operations in a guarded multi, with zkgen's sentinels: a
// create with the session's default ACL, a set and a check at a version,
// a delete; an op failing on its own fails the multi with its sentinel;
// anything that is not a write is refused before anything is sent.
func TestGuardedOps(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	l := runtime.NewLock(s, runtime.At(dir).Lit("lock"))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := runtime.OpsOf(s).EnsurePath(ctx, nil, dir); err != nil {
		t.Fatal(err)
	}
	node := dir + "/done"
	if _, err := l.Guarded(ctx, runtime.CreateOp(node, []byte("v0"))); err != nil {
		t.Fatalf("CreateOp: %v", err)
	}
	if _, err := l.Guarded(ctx, runtime.CreateOp(node, nil)); !errors.Is(err, runtime.ErrNodeExists) {
		t.Fatalf("CreateOp of an existing node = %v, want ErrNodeExists", err)
	}
	res, err := l.Guarded(ctx, runtime.CheckOp(node, 0), runtime.SetOp(node, []byte("v1"), 0))
	if err != nil || len(res) != 2 || res[1].Stat == nil || res[1].Stat.Version != 1 {
		t.Fatalf("CheckOp, SetOp = %v, %v", res, err)
	}
	if _, err := l.Guarded(ctx, runtime.SetOp(node, []byte("v2"), 0)); !errors.Is(err, runtime.ErrBadVersion) {
		t.Fatalf("SetOp at an old version = %v, want ErrBadVersion", err)
	}
	if _, err := l.Guarded(ctx, "delete "+node); err == nil {
		t.Fatal("a string was sent as an op")
	}
	if _, err := l.Guarded(ctx, runtime.DeleteOp(node, runtime.AnyVersion)); err != nil {
		t.Fatalf("DeleteOp: %v", err)
	}
	if ok, err := s.Exists(ctx, node); err != nil || ok {
		t.Fatalf("after DeleteOp the node exists: %v, %v", ok, err)
	}
}
