package runtime_test

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest/simsearch"
)

// The search for bugs on the simulator (bash .ci/sim; docs/reliability.md,
// "Searching for bugs"). Each workload (search_sim_test.go) runs several
// simulated processes of one recipe on an in-process ZooKeeper under a
// fault schedule drawn from a seed, on virtual time (testing/synctest),
// records what the processes saw, and checks the recipe's contract on
// that record. The driver — seeds, shrinking, reports, replays, schedule
// files — is the public package runtime/zktest/simsearch, which users
// point at their own services (docs/testing.md); TestSimSearch runs it on
// the recipes' workloads.
//
// Environment (set by .ci/sim): simsearch.Search's, and
//
//	ZKGEN_SIM_RECIPES   the workloads to search, space-separated names or
//	                    prefixes ("queue" selects queue-fifo, ...); all if empty
//	ZKGEN_SIM_STEPS     put every step of the server in the history
//	ZKGEN_SIM_HISTORIES a directory: a replay writes each distinct history there
//	ZKGEN_SIM_LOGS      put each process's session logs (debug level) in the history

// workload is one recipe's search: a simsearch.Workload (search), with
// what only the recipes' workloads use.
type workload struct {
	name       string
	procs, ops int     // the size of a run before shrinking
	minProcs   int     // shrinking keeps at least this many processes
	rate       float64 // the probability of a fault per request
	run        func(r *searchRun)
	ensemble   int  // servers; 0 or 1: one
	reap       bool // an operator deletes the recipe's ephemeral nodes by hand (searchRun.reaper)
	// hold, if set, is the longest a holder holds a tenure, quiet (its
	// client only pings), instead of a 50 ms burst of work (tenureSearch).
	hold time.Duration
	// faults, if set, are the chaos faults drawn when the run names none
	// (simsearch.Config.Faults; sim.Chaos.Faults).
	faults []string
}

// searchRun is one run of a recipe's workload.
type searchRun struct {
	*simsearch.Run
	reap bool          // the workload's reap: see reaper
	hold time.Duration // the workload's hold
}

// search is w as the driver runs it.
func (w workload) search() simsearch.Workload {
	return simsearch.Workload{Name: w.name, Procs: w.procs, Ops: w.ops, MinProcs: w.minProcs, Rate: w.rate,
		Ensemble: w.ensemble, Faults: w.faults,
		Run: func(r *simsearch.Run) { w.run(&searchRun{Run: r, reap: w.reap, hold: w.hold}) }}
}

// runOnce runs w under cfg in a bubble of its own.
func runOnce(t *testing.T, w workload, cfg simsearch.Config) *simsearch.Run {
	return simsearch.RunOnce(t, w.search(), cfg)
}

// selectWorkloads returns the workloads that names select (all if none).
func selectWorkloads(t *testing.T, names []string) []workload {
	if len(names) == 0 {
		return allWorkloads()
	}
	var out []workload
	for _, n := range names {
		found, before := false, len(out)
		for _, w := range allWorkloads() { // a name, or else a prefix
			if w.name == n {
				out = append(out, w)
				found = true
			}
		}
		for _, w := range allWorkloads() {
			if !found && strings.HasPrefix(w.name, n+"-") {
				out = append(out, w)
			}
		}
		found = len(out) > before
		if !found {
			var all []string
			for _, w := range allWorkloads() {
				all = append(all, w.name)
			}
			t.Fatalf("no workload %q; there are: %s", n, strings.Join(all, " "))
		}
	}
	return out
}

// TestSimSearch: without ZKGEN_SIM_DURATION, seed 1 of every workload, as
// part of go test ./runtime; with it, the search (.ci/sim).
func TestSimSearch(t *testing.T) {
	names := strings.Fields(os.Getenv("ZKGEN_SIM_RECIPES"))
	if os.Getenv("ZKGEN_SIM_REPLAY") != "" || os.Getenv("ZKGEN_SIM_REPLAY_FILE") != "" {
		names = nil // a replay names its workload
	}
	var ws []simsearch.Workload
	for _, w := range selectWorkloads(t, names) {
		ws = append(ws, w.search())
	}
	simsearch.Search(t, ws, simsearch.Options{Command: "bash .ci/sim replay"})
}

// stopLine tells workers, which check it between operations, to stop:
// from one virtual millisecond after stop is called on. A virtual instant,
// not a closed channel, decides: the workers that run at the instant stop
// is called (a session's end wakes a producer and a consumer together)
// all go on, whether Go runs them before the caller or after, and every
// worker that checks at a later instant stops, whichever of the goroutines
// woken at that instant (the line's own, a Take's deadline) runs first.
// Closed at once, a consumer that checked before the close started one
// more Take and one that checked after did not (queue-fifo
// seed=777000,procs=4,ops=30,rate=0.03,chaos=4 gave 2 histories in 20);
// closed by a timer one millisecond on, a consumer whose Take's deadline
// fell at that instant did or did not (ensemble-queue
// seed=387396189,procs=4,ops=30,rate=0.03,chaos=4, 2 in 20 on one
// processor).
type stopLine struct{ at atomic.Int64 } // UnixNano of the virtual clock; 0: not called

// stop draws the line one virtual millisecond from now.
func (l *stopLine) stop() { l.at.Store(time.Now().Add(time.Millisecond).UnixNano()) }

// stopped reports whether the line is drawn and passed.
func (l *stopLine) stopped() bool {
	at := l.at.Load()
	return at != 0 && time.Now().UnixNano() >= at
}

// isClosed reports whether ch is closed (nil: never), without waiting: a
// worker woken by one of several channels checks them in its own order,
// so that two closed at one instant are taken in that order, not in the
// one select picks at random.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
