package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

// A session opened WithReadOnly refuses creates, deletes and multis before
// sending them, and its reads skip their housekeeping: listing a queue's
// dead letters leaves a stray reason (which a writer's listing removes).
func TestReadOnlySession(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	w := connect(t, srv.Servers())
	ro := connect(t, srv.Servers(), runtime.WithReadOnly())

	q := runtime.NewAckQueue(w, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(1))
	if err := q.Put(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	if err := takeOne(t, ctx, q).Nack(ctx, errors.New("poison")); err != nil {
		t.Fatal(err)
	}
	stray := dir + "/dead-reasons/b-0000000000.item-0000000099"
	if _, err := w.Conn().Create(stray, []byte("stray"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	rq := runtime.NewAckQueue(ro, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(1))
	if err := rq.Put(ctx, job{N: 2}); !errors.Is(err, runtime.ErrReadOnly) {
		t.Errorf("Put on a read-only session: %v, want ErrReadOnly", err)
	}
	if err := ro.Delete(ctx, stray); !errors.Is(err, runtime.ErrReadOnly) {
		t.Errorf("Delete on a read-only session: %v, want ErrReadOnly", err)
	}
	if _, err := ro.CreatePersistent(ctx, dir+"/x"); !errors.Is(err, runtime.ErrReadOnly) {
		t.Errorf("CreatePersistent on a read-only session: %v, want ErrReadOnly", err)
	}
	dead, err := rq.DeadLetters(ctx)
	if err != nil || len(dead) != 1 || dead[0].Reason != "poison" {
		t.Fatalf("DeadLetters on a read-only session: %v, %v", dead, err)
	}
	if ok, err := w.Exists(ctx, stray); err != nil || !ok {
		t.Fatalf("a read-only listing removed the stray reason (exists %v, %v)", ok, err)
	}
	if _, err := q.DeadLetters(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Exists(ctx, stray); err != nil || ok {
		t.Fatalf("a writer's listing left the stray reason (exists %v, %v)", ok, err)
	}
}
