package example_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The election, group, config and two-phase commit of the example, through
// the generated handles, on a real ZooKeeper.
func TestGeneratedElectionGroupConfigDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() (*runtime.Session, *coord.Client) {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, coord.New(s)
	}
	as, a := connect()
	_, b := connect()

	// Election: a leads, b takes over when a's session ends.
	if p := a.Scheduler().Path(); p != "/zkgen-example/election/scheduler" {
		t.Fatalf("path %q", p)
	}
	obs := b.Scheduler().Observe(ctx)
	la, err := a.Scheduler().Campaign(ctx, coord.Member{Host: "a", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := b.Scheduler().Leader(ctx); err != nil || m.Host != "a" {
		t.Fatalf("Leader = %v, %v", m, err)
	}
	next := make(chan *runtime.Leadership[coord.Member], 1)
	go func() {
		l, err := b.Scheduler().Campaign(ctx, coord.Member{Host: "b", Port: 2})
		if err != nil {
			t.Error(err)
		}
		next <- l
	}()

	// Group: both join; the watch sees them.
	w := b.Workers().Watch(ctx)
	if _, err := a.Workers().Join(ctx, coord.Member{Host: "a", Port: 1}); err != nil {
		t.Fatal(err)
	}
	mb, err := b.Workers().Join(ctx, coord.Member{Host: "b", Port: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitHosts(t, ctx, w, "a", "b")

	// Two-phase commit with the typed participants.
	tx := a.Deploy("tx-9")
	if err := tx.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []runtime.Participant{coord.DeployDatabase, coord.DeployCache, coord.DeploySearch} {
		h := b.Deploy("tx-9")
		if err := h.Join(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := h.Vote(ctx, p, runtime.Commit); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := tx.Outcome(ctx); err != nil || d != runtime.Commit {
		t.Fatalf("Outcome = %v, %v", d, err)
	}

	// Config: set, compare-and-set, watch.
	cw := b.Flags().Watch(ctx)
	ver, err := a.Flags().Set(ctx, coord.Flags{DarkMode: true, MaxBatch: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Flags().CompareAndSet(ctx, coord.Flags{MaxBatch: 20}, ver); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Flags().CompareAndSet(ctx, coord.Flags{MaxBatch: 30}, ver); !errors.Is(err, runtime.ErrVersionConflict) {
		t.Fatalf("stale CompareAndSet = %v", err)
	}
	seen := false
	for v := range cw {
		if seen = v.Exists && v.Value.MaxBatch == 20; seen {
			break
		}
	}
	if !seen {
		t.Fatal("config watch closed before showing the value")
	}
	if f, _, err := a.Flags().Get(ctx); err != nil || f.MaxBatch != 20 {
		t.Fatalf("Get = %v, %v", f, err)
	}

	// a's session ends: b leads with a higher epoch, a leaves the group.
	as.Close()
	lb := <-next
	if lb == nil {
		t.FailNow()
	}
	if lb.Epoch() <= la.Epoch() {
		t.Fatalf("epoch %d after %d", lb.Epoch(), la.Epoch())
	}
	seen = false
	for st := range obs {
		if seen = st.Elected && st.Payload.Host == "b"; seen {
			break
		}
	}
	if !seen {
		t.Fatal("Observe closed before showing the new leader")
	}
	waitHosts(t, ctx, w, "b")
	if err := mb.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Scheduler().Leader(ctx); !errors.Is(err, runtime.ErrNoLeader) {
		t.Fatalf("Leader after Resign = %v", err)
	}
}

func waitHosts(t *testing.T, ctx context.Context, w <-chan runtime.MemberList[coord.Member], want ...string) {
	t.Helper()
	for {
		select {
		case ms := <-w:
			var got []string
			for _, m := range ms.Members {
				got = append(got, m.Host)
			}
			if slices.Equal(got, want) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("group never showed %v", want)
		}
	}
}
