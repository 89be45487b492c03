package runtime_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// txShows waits until the cache shows transaction id as want (absent
// when want is the zero TxStatus), then fails unless the transaction's
// own Status reads the same.
func txShows(t *testing.T, ctx context.Context, cache *runtime.TwoPCCache[string], evs <-chan runtime.CacheEvent[string, runtime.TxStatus],
	tx *runtime.TwoPhaseCommit[deployment], id string, want runtime.TxStatus) {
	t.Helper()
	awaitKind(t, ctx, cache, evs, id, "transaction "+id+" as "+txString(want), func(st runtime.TxStatus, there bool) bool {
		return there == want.Proposed && reflect.DeepEqual(st, want)
	})
	if got, err := tx.Status(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("the cache shows %s; Status reads %s (%v)", txString(want), txString(got), err)
	}
}

func txString(st runtime.TxStatus) string { return fmt.Sprintf("%+v", st) }

// votes builds a TxStatus of the sites, proposed, with the votes given by
// state: "" (none yet), "joined" (joined and present), "gone" (joined,
// presence lost), "commit" or "abort".
func votes(d runtime.Decision, states ...string) runtime.TxStatus {
	st := runtime.TxStatus{Proposed: true, Decision: d}
	for i, s := range states {
		v := runtime.VoteStatus{Participant: sites[i]}
		switch s {
		case "joined":
			v.Joined, v.Present = true, true
		case "gone":
			v.Joined = true
		case "commit":
			v.Vote = runtime.Commit
		case "abort":
			v.Vote = runtime.Abort
		}
		st.Votes = append(st.Votes, v)
	}
	return st
}

// A two-phase commit's cache shows each transaction's votes (joined,
// present, commit or abort) and its decision, as TwoPhaseCommit.Status
// reads them: through a proposal, a join, votes, a participant's presence
// lost before it voted, the abort decided then, and through the expiry of
// the cache's session, during which another transaction commits and the
// first is removed (the gap is announced, then the cache holds the new
// state) (docs/twopc.md, what the cache mirrors).
func TestTwoPCCacheVotesAndDecision(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	w := connect(t, srv.Servers())
	root := testRoot(t)
	cache, err := runtime.NewTwoPCCache(runtime.TemplateAt(root).Str("id"), func(p runtime.Params) string { return p.Str(0) }, sites)
	if err != nil {
		t.Fatal(err)
	}
	expire := expireKindCache(t, ctx, srv, cache)
	evs := cache.Events(ctx)
	txAt := func(s *runtime.Session, id string) *runtime.TwoPhaseCommit[deployment] {
		return runtime.NewTwoPhaseCommit(s, runtime.At(root).Str("id", id), runtime.JSONCodec[deployment](), sites)
	}
	coord := txAt(w, "t1")
	if err := coord.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	txShows(t, ctx, cache, evs, coord, "t1", votes(0, "", "", ""))
	s0, s2 := connect(t, srv.Servers()), connect(t, srv.Servers())
	if err := txAt(s0, "t1").Join(ctx, sites[0]); err != nil {
		t.Fatal(err)
	}
	txShows(t, ctx, cache, evs, coord, "t1", votes(0, "joined", "", ""))
	if err := txAt(s0, "t1").Vote(ctx, sites[0], runtime.Commit); err != nil {
		t.Fatal(err)
	}
	if err := txAt(w, "t1").Vote(ctx, sites[1], runtime.Commit); err != nil {
		t.Fatal(err)
	}
	txShows(t, ctx, cache, evs, coord, "t1", votes(0, "commit", "commit", ""))
	if err := txAt(s2, "t1").Join(ctx, sites[2]); err != nil {
		t.Fatal(err)
	}
	txShows(t, ctx, cache, evs, coord, "t1", votes(0, "commit", "commit", "joined"))
	if err := s2.Close(); err != nil { // its presence goes before it voted: the transaction aborts
		t.Fatal(err)
	}
	txShows(t, ctx, cache, evs, coord, "t1", votes(0, "commit", "commit", "gone"))
	if d, err := coord.Outcome(ctx); err != nil || d != runtime.Abort {
		t.Fatalf("outcome %v, %v; want abort", d, err)
	}
	txShows(t, ctx, cache, evs, coord, "t1", votes(runtime.Abort, "commit", "commit", "gone"))

	t2 := txAt(w, "t2")
	expire(func() {
		if err := t2.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		for _, p := range sites {
			if err := t2.Vote(ctx, p, runtime.Commit); err != nil {
				t.Fatal(err)
			}
		}
		if d, err := t2.Outcome(ctx); err != nil || d != runtime.Commit {
			t.Fatalf("outcome %v, %v; want commit", d, err)
		}
		if err := coord.Remove(ctx); err != nil {
			t.Fatal(err)
		}
	})
	txShows(t, ctx, cache, evs, t2, "t2", votes(runtime.Commit, "commit", "commit", "commit"))
	txShows(t, ctx, cache, evs, coord, "t1", runtime.TxStatus{})
	if err := txAt(w, "t3").Propose(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txAt(w, "t3").Vote(ctx, sites[1], runtime.Abort); err != nil {
		t.Fatal(err)
	}
	txShows(t, ctx, cache, evs, txAt(w, "t3"), "t3", votes(0, "", "abort", ""))
}
