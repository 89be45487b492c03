package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

func TestQueueStats(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	s := connect(t, srv.Servers())
	dir := testRoot(t)

	q := runtime.NewQueue(s, runtime.At(dir+"/fifo"), runtime.StringCodec(), runtime.WithBucketSize(2))
	if st, err := q.Stats(ctx); err != nil || st.Len != 0 || !st.Oldest.IsZero() {
		t.Fatalf("empty queue: %+v, %v", st, err)
	}
	before := time.Now().Add(-time.Minute)
	if _, err := q.PutAll(ctx, []string{"a", "b", "c"}); err != nil { // two buckets
		t.Fatal(err)
	}
	if _, err := q.Take(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Len != 2 || st.ByPriority != nil || st.Oldest.Before(before) {
		t.Fatalf("fifo stats %+v, %v", st, err)
	}

	pq := runtime.NewAckPriorityQueue(s, runtime.At(dir+"/prio"), runtime.StringCodec(), 3)
	for _, p := range []runtime.Priority{2, 0, 2, 2} {
		if err := pq.Put(ctx, p, "x"); err != nil {
			t.Fatal(err)
		}
	}
	d, err := pq.Take(ctx) // claims the priority-0 item
	if err != nil {
		t.Fatal(err)
	}
	st, err = pq.Stats(ctx)
	if err != nil || st.Len != 4 || !slices.Equal(st.ByPriority, []int{1, 0, 3}) || st.Claimed != 1 || st.Oldest.IsZero() {
		t.Fatalf("priority stats %+v, %v", st, err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err = pq.Stats(ctx); err != nil || !slices.Equal(st.ByPriority, []int{0, 0, 3}) || st.Claimed != 0 {
		t.Fatalf("after ack %+v, %v", st, err)
	}
}

func TestBarrierAndDoubleBarrierState(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	s := connect(t, srv.Servers())
	dir := testRoot(t)

	b := runtime.NewBarrier(s, runtime.At(dir+"/b"))
	if up, err := b.Raised(ctx); up || err != nil {
		t.Fatalf("raised before Raise: %v %v", up, err)
	}
	if err := b.Raise(ctx); err != nil {
		t.Fatal(err)
	}
	if up, err := b.Raised(ctx); !up || err != nil {
		t.Fatalf("raised after Raise: %v %v", up, err)
	}

	db := runtime.NewDoubleBarrier(s, runtime.At(dir+"/db"), 1)
	if st, err := db.State(ctx); err != nil || len(st.Participants) != 0 || st.Ready {
		t.Fatalf("empty double barrier: %+v %v", st, err)
	}
	if err := db.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := db.State(ctx)
	if err != nil || len(st.Participants) != 1 || !st.Ready || st.Participants[0].Node != db.Node() || !st.Participants[0].Known {
		t.Fatalf("entered double barrier: %+v %v", st, err)
	}
}

func TestElectionCandidates(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	dir := testRoot(t)
	leader := runtime.NewElection(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
	if _, err := leader.Campaign(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	s2 := connect(t, srv.Servers())
	waiting := runtime.NewElection(s2, runtime.At(dir), runtime.StringCodec())
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := waiting.Campaign(cctx, "second"); done <- err }()
	waitChildren(t, ctx, s2, dir, 4) // two candidates, leader, epoch
	cs, err := leader.Candidates(ctx)
	if err != nil || len(cs) != 2 || cs[0].Payload != "first" || cs[1].Payload != "second" || cs[0].Seq >= cs[1].Seq {
		t.Fatalf("candidates %+v, %v", cs, err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled campaign: %v", err)
	}
}

func TestTwoPCStatus(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	s := connect(t, srv.Servers())
	tx := runtime.NewTwoPhaseCommit(s, runtime.At(testRoot(t)), runtime.BytesCodec(), sites)
	if st, err := tx.Status(ctx); err != nil || st.Proposed {
		t.Fatalf("before propose: %+v %v", st, err)
	}
	if err := tx.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Join(ctx, "cache"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Vote(ctx, "database", runtime.Commit); err != nil {
		t.Fatal(err)
	}
	st, err := tx.Status(ctx)
	want := []runtime.VoteStatus{{Participant: "database", Vote: runtime.Commit}, {Participant: "cache", Joined: true, Present: true}, {Participant: "search"}}
	if err != nil || !st.Proposed || !slices.Equal(st.Votes, want) || st.Decision != 0 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if err := tx.Vote(ctx, "search", runtime.Abort); err != nil {
		t.Fatal(err)
	}
	if d, err := tx.Outcome(ctx); d != runtime.Abort || err != nil {
		t.Fatalf("outcome %v %v", d, err)
	}
	if st, err := tx.Status(ctx); err != nil || st.Decision != runtime.Abort {
		t.Fatalf("decided status %+v, %v", st, err)
	}
}

func TestWithAuthAndAdminReads(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 60*time.Second)
	dir := testRoot(t)
	authed := connect(t, srv.Servers(), runtime.WithAuth("digest", []byte("ops:secret")))
	created, err := authed.CreatePersistent(ctx, dir+"/a/b")
	if err != nil || len(created) < 2 || created[len(created)-1] != dir+"/a/b" {
		t.Fatalf("CreatePersistent: %v, %v", created, err)
	}
	if again, err := authed.CreatePersistent(ctx, dir+"/a/b"); err != nil || len(again) != 0 {
		t.Fatalf("CreatePersistent again: %v, %v", again, err)
	}
	if kids, err := authed.Children(ctx, dir+"/a"); err != nil || !slices.Equal(kids, []string{"b"}) {
		t.Fatalf("Children: %v, %v", kids, err)
	}
	if ok, err := authed.Exists(ctx, dir+"/a/nope"); ok || err != nil {
		t.Fatalf("Exists: %v, %v", ok, err)
	}
	secret := dir + "/secret"
	if _, err := authed.Conn().Create(secret, []byte("x"), 0, zk.DigestACL(zk.PermAll, "ops", "secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := authed.Conn().Get(secret); err != nil {
		t.Fatalf("authenticated read: %v", err)
	}
	other := connect(t, srv.Servers())
	if _, _, err := other.Conn().Get(secret); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated read: %v, want ErrNoAuth", err)
	}
	if _, err := other.Children(ctx, secret); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated Children: %v, want ErrNoAuth", err)
	}
}
