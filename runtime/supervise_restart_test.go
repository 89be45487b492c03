package runtime_test

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A standalone ZooKeeper is killed (SIGKILL) under a supervised service that
// holds a lock, leads an election, stays in a group and owns a
// partitioner's partitions, and is started again 5 s later. The client gave
// up on its session by its own clock meanwhile, but the server restores the
// session from its log, with a full timeout from its restart, and with it
// the session's ephemeral nodes. Supervise must not let the next session
// begin while they are there (docs/sessions.md: "the old session's nodes
// are gone before the new one campaigns or joins"): the work's first act on
// each session lists every ephemeral node of the service's tree, and finds
// none but its own session's. Then every kind joins or campaigns again, once.
// Before Supervise closed the old session, it waited out the timeout from
// the client's last contact, which the restart outlasted: the new session
// found the old one's member, candidate, lock and owner nodes.
func TestSuperviseServerRestartRetiresOldSession(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const partitions = 4
	led := make(chan struct{}, 4) // the service leads, on a session
	w := supervise(t, ctx, srv.Servers(), func(ctx context.Context, s *runtime.Session) error {
		for p, owner := range ephemeralsUnder(t, s, dir) {
			if owner != s.ID() {
				t.Errorf("session 0x%x begins while %s of session 0x%x is still there", s.ID(), p, owner)
			}
		}
		return holdEverything(ctx, s, dir, partitions, led)
	})
	joined := func(admin *runtime.Session) {
		t.Helper()
		for sub, n := range map[string]int{"group": 1, "lock": 1, "part/owners": partitions} {
			if kids := waitChildren(t, ctx, admin, dir+"/"+sub, n); len(kids) != n {
				t.Fatalf("%s: %v, want %d nodes", sub, kids, n)
			}
		}
		select {
		case <-led:
		case <-ctx.Done():
			t.Fatal("no leader elected")
		}
	}
	ev := w.next(t, ctx)
	joined(connect(t, srv.Servers()))

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-time.After(5 * time.Second): // the outage's length, not a synchronisation
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	ev2 := w.next(t, ctx)
	if ev2.PrevID != ev.ID {
		t.Fatalf("second session: %+v (first 0x%x)", ev2, ev.ID)
	}
	admin := connect(t, srv.Servers())
	joined(admin)
	for p, owner := range ephemeralsUnder(t, admin, dir) {
		if owner != ev2.ID {
			t.Errorf("after the re-join, %s belongs to session 0x%x, not 0x%x", p, owner, ev2.ID)
		}
	}
	if err := w.stop(t, ctx); err != nil {
		t.Fatalf("Supervise = %v", err)
	}
}

// holdEverything locks, campaigns, joins a group and a partitioner under
// dir on s, and holds them until ctx ends; led is told when it leads.
func holdEverything(ctx context.Context, s *runtime.Session, dir string, partitions int, led chan<- struct{}) error {
	l := runtime.NewLock(s, runtime.At(dir+"/lock"))
	if err := l.Lock(ctx); err != nil {
		return err
	}
	errs := make(chan error, 3)
	go func() { errs <- runtime.NewGroup(s, runtime.At(dir+"/group"), runtime.StringCodec()).Stay(ctx, "w") }()
	go func() {
		errs <- runtime.NewElection(s, runtime.At(dir+"/election"), runtime.StringCodec()).Run(ctx, "w",
			func(ctx context.Context, _ *runtime.Leadership[string]) error {
				led <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			})
	}()
	go func() {
		errs <- runtime.NewPartitioner(s, runtime.At(dir+"/part"), partitions, runtime.StringCodec()).Stay(ctx, "w")
	}()
	<-ctx.Done()
	for range 3 {
		<-errs
	}
	return context.Cause(ctx)
}

// ephemeralsUnder returns every ephemeral node under root, with the
// session that owns it.
func ephemeralsUnder(t *testing.T, s *runtime.Session, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	var walk func(p string)
	walk = func(p string) {
		kids, st, err := s.Conn().Children(p)
		if err == zk.ErrNoNode {
			return
		}
		if err != nil {
			t.Errorf("children of %s: %v", p, err)
			return
		}
		if st.EphemeralOwner != 0 {
			out[p] = st.EphemeralOwner
		}
		for _, k := range kids {
			walk(path.Join(p, k))
		}
	}
	walk(root)
	return out
}
