package runtime_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

// aclRoot creates the test's root as an open persistent node (so the
// shared ancestors are never created with a test's restrictive ACL) and
// removes it, and everything under it, at the end with admin, a session
// allowed to delete it all.
func aclRoot(t *testing.T, open *runtime.Session, admin func() *runtime.Session) string {
	t.Helper()
	root := testRoot(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := open.CreatePersistent(ctx, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(t, admin(), root) })
	return root
}

// removeTree deletes p and its descendants (already gone is fine).
func removeTree(t *testing.T, s *runtime.Session, p string) {
	t.Helper()
	kids, _, err := s.Conn().Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil {
		t.Errorf("cleanup: children of %s: %v", p, err)
		return
	}
	for _, k := range kids {
		removeTree(t, s, p+"/"+k)
	}
	if err := s.Conn().Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("cleanup: delete %s: %v", p, err)
	}
}

// getACL reads p's ACL with a plain go-zookeeper call.
func getACL(t *testing.T, s *runtime.Session, p string) []zk.ACL {
	t.Helper()
	acl, _, err := s.Conn().GetACL(p)
	if err != nil {
		t.Fatalf("GetACL %s: %v", p, err)
	}
	return acl
}

// A lock created with creator_all by a digest-authenticated session: a
// session without credentials is refused at once with ErrNoAuth and leaves
// nothing; a session with the same credentials takes it.
func TestACLCreatorAllLock(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	alice := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("alice:secret")))
	anon := connect(t, srv.Servers())
	root := aclRoot(t, anon, func() *runtime.Session { return alice })
	dir := root + "/lock"
	acl := runtime.WithNodeACL(runtime.CreatorAllACL())

	held := runtime.NewLock(alice, runtime.At(dir), acl)
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	aliceID := zk.DigestACL(zk.PermAll, "alice", "secret")[0].ID
	want := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: aliceID}}
	if got := getACL(t, alice, dir); !slices.Equal(got, want) {
		t.Fatalf("lock directory ACL %v, want %v", got, want)
	}
	kids := childrenOf(t, alice, dir)
	if len(kids) != 1 {
		t.Fatalf("lock directory holds %v, want the holder's node", kids)
	}
	if got := getACL(t, alice, dir+"/"+kids[0]); !slices.Equal(got, want) {
		t.Fatalf("holder node ACL %v, want %v", got, want)
	}

	// Without credentials: refused, not left waiting. The context is long
	// so that a hang fails on the error check, not quietly.
	for _, name := range []string{"Lock", "TryLock"} {
		l := runtime.NewLock(anon, runtime.At(dir), acl)
		var err error
		if name == "Lock" {
			err = l.Lock(ctx)
		} else {
			_, err = l.TryLock(ctx)
		}
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("anonymous %s: %v, want ErrNoAuth", name, err)
		}
		if runtime.Classify(err) != runtime.Fatal {
			t.Fatalf("anonymous %s: error classified %v, want Fatal", name, runtime.Classify(err))
		}
	}
	// A handle without the option (the open default) is refused too: the
	// directory's ACL decides.
	if err := runtime.NewLock(anon, runtime.At(dir)).Lock(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Lock without the option: %v, want ErrNoAuth", err)
	}
	if got := childrenOf(t, alice, dir); !slices.Equal(got, kids) {
		t.Fatalf("after refused attempts the directory holds %v, want %v", got, kids)
	}

	// Same credentials, another session: waits for the holder, then takes it.
	alice2 := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("alice:secret")))
	next := runtime.NewLock(alice2, runtime.At(dir), acl)
	got := make(chan error, 1)
	go func() { got <- next.Lock(ctx) }()
	waitChildren(t, ctx, alice, dir, 2)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock with the same credentials: %v", err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if left := childrenOf(t, alice, dir); len(left) != 0 {
		t.Fatalf("after unlock the directory holds %v", left)
	}
}

// A queue created with world_read: anyone can read its length, only the
// creator's identity can put and take.
func TestACLWorldReadQueue(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	alice := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("alice:secret")))
	anon := connect(t, srv.Servers())
	root := aclRoot(t, anon, func() *runtime.Session { return alice })
	dir := root + "/q"
	acl := runtime.WithNodeACL(runtime.WorldReadACL())

	q := runtime.NewQueue(alice, runtime.At(dir), runtime.StringCodec(), acl)
	for _, v := range []string{"a", "b"} {
		if err := q.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	aliceID := zk.DigestACL(zk.PermAll, "alice", "secret")[0].ID
	want := []zk.ACL{{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}, {Perms: zk.PermAll, Scheme: "digest", ID: aliceID}}
	// Read with the creator's session: ZooKeeper masks digest hashes for
	// readers without admin permission.
	if got := getACL(t, alice, dir); !slices.Equal(got, want) {
		t.Fatalf("queue directory ACL %v, want %v", got, want)
	}
	for _, b := range childrenOf(t, anon, dir) {
		if got := getACL(t, alice, dir+"/"+b); !slices.Equal(got, want) {
			t.Fatalf("bucket %s ACL %v, want %v", b, got, want)
		}
		for _, item := range childrenOf(t, anon, dir+"/"+b) {
			if got := getACL(t, alice, dir+"/"+b+"/"+item); !slices.Equal(got, want) {
				t.Fatalf("item %s ACL %v, want %v", item, got, want)
			}
		}
	}

	// The same handle as the creator's (generated code passes the spec's
	// ACL to every handle), on a session without credentials.
	aq := runtime.NewQueue(anon, runtime.At(dir), runtime.StringCodec(), acl)
	if n, err := aq.Len(ctx); err != nil || n != 2 {
		t.Fatalf("anonymous Len: %d, %v; want 2", n, err)
	}
	if err := aq.Put(ctx, "x"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Put: %v, want ErrNoAuth", err)
	}
	if v, err := aq.Take(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Take: %q, %v; want ErrNoAuth", v, err)
	}
	ack := runtime.NewAckQueue(anon, runtime.At(dir), runtime.StringCodec(), acl)
	if d, err := ack.Take(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous at-least-once Take: %v, %v; want ErrNoAuth", d, err)
	}
	// Without the option too: the nodes' ACL decides, on the server.
	plain := runtime.NewQueue(anon, runtime.At(dir), runtime.StringCodec())
	if err := plain.Put(ctx, "x"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Put without the option: %v, want ErrNoAuth", err)
	}
	if v, err := plain.Take(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Take without the option: %q, %v; want ErrNoAuth", v, err)
	}
	if n, err := aq.Len(ctx); err != nil || n != 2 {
		t.Fatalf("Len after refused puts and takes: %d, %v; want 2", n, err)
	}
	for _, want := range []string{"a", "b"} {
		if v, err := q.Take(ctx); err != nil || v != want {
			t.Fatalf("creator Take: %q, %v; want %q", v, err, want)
		}
	}
}

// Explicit digest users: a user granted only r can see the lock and the
// queue but can neither take the lock nor consume the queue; the user
// granted rwcda can.
func TestACLDigestUsers(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	writer := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("writer:w-pass")))
	reader := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("reader:r-pass")))
	anon := connect(t, srv.Servers())
	root := aclRoot(t, anon, func() *runtime.Session { return writer })
	acl := runtime.WithNodeACL(runtime.DigestACL(
		runtime.DigestUser{ID: zk.DigestACL(0, "writer", "w-pass")[0].ID, Perms: "rwcda"},
		runtime.DigestUser{ID: zk.DigestACL(0, "reader", "r-pass")[0].ID, Perms: "r"},
	))

	lockDir := root + "/lock"
	held := runtime.NewLock(writer, runtime.At(lockDir), acl)
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	rl := runtime.NewLock(reader, runtime.At(lockDir), acl)
	if hs, err := rl.Holders(ctx); err != nil || len(hs) != 1 {
		t.Fatalf("reader Holders: %v, %v; want the writer", hs, err)
	}
	if err := rl.Lock(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reader Lock: %v, want ErrNoAuth", err)
	}
	if _, err := runtime.NewLock(anon, runtime.At(lockDir)).Holders(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Holders: %v, want ErrNoAuth", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	qDir := root + "/q"
	q := runtime.NewQueue(writer, runtime.At(qDir), runtime.StringCodec(), acl)
	if err := q.Put(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	rq := runtime.NewQueue(reader, runtime.At(qDir), runtime.StringCodec())
	if n, err := rq.Len(ctx); err != nil || n != 1 {
		t.Fatalf("reader Len: %d, %v; want 1", n, err)
	}
	if v, err := rq.Take(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reader Take: %q, %v; want ErrNoAuth", v, err)
	}
	if v, err := q.Take(ctx); err != nil || v != "job" {
		t.Fatalf("writer Take: %q, %v", v, err)
	}
}

// Every other handle creates its nodes with the handle's ACL too.
func TestACLEveryHandle(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	alice := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("alice:secret")))
	anon := connect(t, srv.Servers())
	root := aclRoot(t, anon, func() *runtime.Session { return alice })
	aliceID := zk.DigestACL(zk.PermAll, "alice", "secret")[0].ID
	want := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: aliceID}}
	acl := runtime.WithNodeACL(runtime.CreatorAllACL())
	at := func(name string) runtime.Path { return runtime.At(root + "/" + name + "/x") }
	check := func(paths ...string) {
		t.Helper()
		for _, p := range paths {
			if got := getACL(t, alice, p); !slices.Equal(got, want) {
				t.Errorf("%s: ACL %v, want %v", p, got, want)
			}
		}
	}

	b := runtime.NewBarrier(alice, at("barrier"), acl)
	if err := b.Raise(ctx); err != nil {
		t.Fatal(err)
	}
	check(root+"/barrier", b.Path())

	c := runtime.NewConfig(alice, at("config"), runtime.StringCodec(), acl)
	if _, err := c.Set(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	check(root+"/config", c.Path())

	k := runtime.NewCounter(alice, at("counter"), acl)
	if _, err := k.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	check(root+"/counter", k.Path())

	g := runtime.NewGroup(alice, at("group"), runtime.StringCodec(), acl)
	m, err := g.Join(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	check(root+"/group", g.Path())
	for _, n := range childrenOf(t, alice, g.Path()) {
		check(g.Path() + "/" + n)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}

	e := runtime.NewElection(alice, at("election"), runtime.StringCodec(), acl)
	lead, err := e.Campaign(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range childrenOf(t, alice, e.Path()) {
		check(e.Path() + "/" + n)
	}
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}

	sem := runtime.NewSemaphore(alice, at("semaphore"), 2, acl)
	lease, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(sem.Path())
	for _, n := range childrenOf(t, alice, sem.Path()) {
		check(sem.Path() + "/" + n)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}

	pq := runtime.NewPriorityQueue(alice, at("pq"), runtime.StringCodec(), 3, acl)
	if err := pq.Put(ctx, 1, "v"); err != nil {
		t.Fatal(err)
	}
	check(pq.Path())
	if _, err := pq.Take(ctx); err != nil {
		t.Fatal(err)
	}

	tx := runtime.NewTwoPhaseCommit(alice, at("twopc"), runtime.StringCodec(), []runtime.Participant{"p1"}, acl)
	if err := tx.ProposeWith(ctx, "payload"); err != nil {
		t.Fatal(err)
	}
	check(root+"/twopc", tx.Path())
	for _, n := range childrenOf(t, alice, tx.Path()) {
		check(tx.Path() + "/" + n)
	}
}
