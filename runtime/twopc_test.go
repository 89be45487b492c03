package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

var sites = []runtime.Participant{"database", "cache", "search"}

type deployment struct {
	Version string `json:"version"`
}

// txSetup is one transaction seen from a coordinator, one handle per
// participant (each on its own session, behind its own proxy so it can be
// expired) and an observer that is neither.
type txSetup struct {
	coord    *runtime.TwoPhaseCommit[deployment]
	parts    []*runtime.TwoPhaseCommit[deployment]
	sessions []*runtime.Session
	proxies  []*zktest.Proxy
	observer *runtime.TwoPhaseCommit[deployment]
}

func newTx(t *testing.T, srv *zktest.Server, p runtime.Path, opts ...runtime.TwoPCOption) *txSetup {
	mk := func(s *runtime.Session) *runtime.TwoPhaseCommit[deployment] {
		return runtime.NewTwoPhaseCommit(s, p, runtime.JSONCodec[deployment](), sites, opts...)
	}
	tx := &txSetup{coord: mk(connect(t, srv.Servers())), observer: mk(connect(t, srv.Servers()))}
	for range sites {
		px := zktest.NewProxy(t, srv.Addr())
		s := connect(t, []string{px.Addr()})
		tx.proxies = append(tx.proxies, px)
		tx.sessions = append(tx.sessions, s)
		tx.parts = append(tx.parts, mk(s))
	}
	return tx
}

// outcomes collects Outcome from the coordinator, the observer and the
// participants listed (concurrently) and requires them all to be want.
func (tx *txSetup) requireOutcome(t *testing.T, ctx context.Context, want runtime.Decision, parts ...int) {
	t.Helper()
	hs := []*runtime.TwoPhaseCommit[deployment]{tx.coord, tx.observer}
	for _, i := range parts {
		hs = append(hs, tx.parts[i])
	}
	got := make([]runtime.Decision, len(hs))
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = h.Outcome(ctx)
		}()
	}
	wg.Wait()
	for i := range hs {
		if errs[i] != nil || got[i] != want {
			t.Fatalf("observer %d: Outcome = %v, %v; want %v (all: %v)", i, got[i], errs[i], want, got)
		}
	}
}

func forModes(t *testing.T, f func(t *testing.T, opts ...runtime.TwoPCOption)) {
	t.Run("notify=all", func(t *testing.T) { f(t) })
	t.Run("notify=coordinator", func(t *testing.T) { f(t, runtime.WithCoordinatorNotify()) })
}

// All three participants commit: the transaction commits for everyone.
// Participants join before the coordinator proposes (Join waits).
func TestTwoPCAllCommit(t *testing.T) {
	srv := server(t)
	forModes(t, func(t *testing.T, opts ...runtime.TwoPCOption) {
		ctx := testCtx(t, time.Minute)
		p := runtime.At(testRoot(t)).Str("id", "tx-1")
		tx := newTx(t, srv, p, opts...)
		joined := make(chan error, len(sites))
		for i, h := range tx.parts {
			go func() { joined <- h.Join(ctx, sites[i]) }()
		}
		if err := tx.coord.ProposeWith(ctx, deployment{"v42"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.coord.Propose(ctx); !errors.Is(err, runtime.ErrTxExists) {
			t.Fatalf("second Propose = %v", err)
		}
		for range sites {
			if err := <-joined; err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.parts[0].Join(ctx, sites[0]); !errors.Is(err, runtime.ErrAlreadyJoined) {
			t.Fatalf("second Join = %v", err)
		}
		for i, h := range tx.parts {
			if pl, err := h.Payload(ctx); err != nil || pl.Version != "v42" {
				t.Fatalf("Payload = %v, %v", pl, err)
			}
			if err := h.Vote(ctx, sites[i], runtime.Commit); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.parts[0].Vote(ctx, sites[0], runtime.Abort); !errors.Is(err, runtime.ErrAlreadyVoted) {
			t.Fatalf("changing a vote = %v", err)
		}
		tx.requireOutcome(t, ctx, runtime.Commit, 0, 1, 2)
		tx.requireOutcome(t, ctx, runtime.Commit, 0, 1, 2) // again: it never changes
		if err := tx.observer.Remove(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// One participant aborts: everyone learns Abort without waiting for the
// others to vote, and later commit votes do not change it.
func TestTwoPCOneAbort(t *testing.T) {
	srv := server(t)
	forModes(t, func(t *testing.T, opts ...runtime.TwoPCOption) {
		ctx := testCtx(t, time.Minute)
		tx := newTx(t, srv, runtime.At(testRoot(t)), opts...)
		if err := tx.coord.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		for i, h := range tx.parts {
			if err := h.Join(ctx, sites[i]); err != nil {
				t.Fatal(err)
			}
		}
		// Everyone waits; then the search site aborts.
		type res struct {
			d   runtime.Decision
			err error
		}
		waiting := make(chan res, 4)
		for _, h := range []*runtime.TwoPhaseCommit[deployment]{tx.coord, tx.observer, tx.parts[0], tx.parts[1]} {
			go func() { d, err := h.Outcome(ctx); waiting <- res{d, err} }()
		}
		if err := tx.parts[2].Vote(ctx, sites[2], runtime.Abort); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if r := <-waiting; r.err != nil || r.d != runtime.Abort {
				t.Fatalf("Outcome = %v, %v; want abort", r.d, r.err)
			}
		}
		for i := 0; i < 2; i++ {
			if err := tx.parts[i].Vote(ctx, sites[i], runtime.Commit); err != nil {
				t.Fatal(err)
			}
		}
		tx.requireOutcome(t, ctx, runtime.Abort, 0, 1, 2)
	})
}

// A participant whose session ends after joining and before voting aborts
// the transaction, whether its session is closed or expired by the server;
// it cannot vote any more.
func TestTwoPCParticipantKilledBeforeVoting(t *testing.T) {
	srv := server(t)
	forModes(t, func(t *testing.T, opts ...runtime.TwoPCOption) {
		for _, how := range []string{"closed", "expired"} {
			t.Run(how, func(t *testing.T) {
				ctx := testCtx(t, time.Minute)
				tx := newTx(t, srv, runtime.At(testRoot(t)), opts...)
				if err := tx.coord.Propose(ctx); err != nil {
					t.Fatal(err)
				}
				for i, h := range tx.parts {
					if err := h.Join(ctx, sites[i]); err != nil {
						t.Fatal(err)
					}
				}
				for i := 0; i < 2; i++ {
					if err := tx.parts[i].Vote(ctx, sites[i], runtime.Commit); err != nil {
						t.Fatal(err)
					}
				}
				waiting := make(chan error, 1)
				go func() {
					d, err := tx.observer.Outcome(ctx)
					if err == nil && d != runtime.Abort {
						err = fmt.Errorf("outcome %v", d)
					}
					waiting <- err
				}()
				if how == "closed" {
					tx.sessions[2].Close()
				} else {
					creds, _ := tx.proxies[2].Session(tx.sessions[2].ID())
					zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
				}
				if err := tx.parts[2].Vote(ctx, sites[2], runtime.Commit); err == nil {
					t.Fatal("a participant voted after its session ended")
				}
				tx.requireOutcome(t, ctx, runtime.Abort, 0, 1)
				if err := <-waiting; err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

// The last commit vote races with the coordinator giving up (ForceAbort):
// whichever decision is written first stands, and every observer — the
// coordinator, the participants and an outsider — sees that one.
func TestTwoPCDecisionRace(t *testing.T) {
	srv := server(t)
	forModes(t, func(t *testing.T, opts ...runtime.TwoPCOption) {
		ctx := testCtx(t, 2*time.Minute)
		root := testRoot(t)
		tx := newTx(t, srv, runtime.At(root), opts...)
		counts := map[runtime.Decision]int{}
		outsider := connect(t, srv.Servers())
		for n := 0; n < 10; n++ {
			p := runtime.At(root).Int("n", n)
			coordS := connect(t, srv.Servers())
			coord := runtime.NewTwoPhaseCommit(coordS, p, runtime.JSONCodec[deployment](), sites, opts...)
			if err := coord.Propose(ctx); err != nil {
				t.Fatal(err)
			}
			parts := make([]*runtime.TwoPhaseCommit[deployment], len(sites))
			for i := range sites {
				parts[i] = runtime.NewTwoPhaseCommit(tx.sessions[i], p, runtime.JSONCodec[deployment](), sites, opts...)
				if err := parts[i].Join(ctx, sites[i]); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 2; i++ {
				if err := parts[i].Vote(ctx, sites[i], runtime.Commit); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			results := make([]runtime.Decision, 5)
			errs := make([]error, 5)
			run := func(k int, f func() (runtime.Decision, error)) {
				wg.Add(1)
				go func() { defer wg.Done(); results[k], errs[k] = f() }()
			}
			// Even rounds race; in odd rounds the coordinator gives up
			// only after the last participant learned the outcome, so
			// a commit stands against a late ForceAbort.
			decided := make(chan struct{})
			run(0, func() (runtime.Decision, error) {
				if n%2 == 1 {
					<-decided
				}
				return coord.ForceAbort(ctx)
			})
			run(1, func() (runtime.Decision, error) {
				defer close(decided)
				if err := parts[2].Vote(ctx, sites[2], runtime.Commit); err != nil {
					return 0, err
				}
				return parts[2].Outcome(ctx)
			})
			run(2, func() (runtime.Decision, error) { return parts[0].Outcome(ctx) })
			run(3, func() (runtime.Decision, error) { return coord.Outcome(ctx) })
			run(4, func() (runtime.Decision, error) {
				return runtime.NewTwoPhaseCommit(outsider, p, runtime.JSONCodec[deployment](), sites, opts...).Outcome(ctx)
			})
			wg.Wait()
			for k := range results {
				if errs[k] != nil {
					t.Fatalf("tx %d observer %d: %v", n, k, errs[k])
				}
				if results[k] != results[0] {
					t.Fatalf("tx %d: observers disagree: %v", n, results)
				}
			}
			counts[results[0]]++
			coordS.Close()
		}
		if counts[runtime.Commit] == 0 {
			t.Fatalf("outcomes %v: a commit must stand against a late ForceAbort", counts)
		}
		t.Logf("outcomes: %v", counts)
	})
}
