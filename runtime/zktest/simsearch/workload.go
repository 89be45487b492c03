package simsearch

import (
	"os"
	goruntime "runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Workload is one search: processes running the code under test on a
// simulated ZooKeeper, and the invariants Run checks.
type Workload struct {
	// Name names the workload in reports and replay lines (no spaces).
	Name string
	// Procs and Ops are the size of a run before shrinking: Config.Procs
	// processes, Config.Ops operations each, as Run counts them.
	Procs, Ops int
	// MinProcs is the fewest processes shrinking keeps (default 1).
	MinProcs int
	// Rate is the probability of a request fault per request (lost
	// replies, expired sessions, cut connections: sim.WithRandomFaults).
	Rate float64
	// Ensemble is the number of servers; 0 or 1: one. With more, followers
	// lag, and the chaos cuts servers off and elects new leaders.
	Ensemble int
	// Faults, if set, are the chaos faults drawn when the configuration
	// names none (Config.Faults; sim.Chaos.Faults).
	Faults []string
	// Races, if set, says what the workload's own code leaves to chance
	// (a select among channels ready at once picks one at random, say),
	// so that a seed may replay to another history: a replay mismatch is
	// then printed but does not fail the search, and shrinking asks 2
	// failures in 4 runs. The processors do not matter: every run is on
	// one (RunOnce).
	Races string
	// Run is one run: it starts the server (Run.Start), runs the
	// processes, records what they saw (Run.Event) and checks the
	// invariants (Run.Violate), for instance with Run.Finish at the end.
	// It runs in a testing/synctest bubble: time is virtual.
	Run func(r *Run)
}

// Deterministic reports whether w replays a seed to one history: it
// names nothing it leaves to chance (Races), and the build replays
// exactly (ReplaysExactly).
func (w Workload) Deterministic() bool { return w.Races == "" && ReplaysExactly() }

// ReplaysExactly reports whether runs of this build replay their seeds
// line for line: false with the race detector (go test -race), whose
// scheduler shuffles the goroutines ready at one instant on purpose. The
// search then prints a replay mismatch without failing, as for a
// workload's Races; a test that compares two runs' histories checks it.
func ReplaysExactly() bool { return !raceDetector }

// Config is w's configuration for seed, with 4 chaos events and the chaos
// faults ZKGEN_SIM_FAULTS names (Search checks the variable).
func (w Workload) Config(seed uint64) Config {
	faults, _ := ParseFaults(os.Getenv("ZKGEN_SIM_FAULTS"))
	return Config{Seed: seed, Procs: w.Procs, Ops: w.Ops, Rate: w.Rate, Chaos: 4, Faults: faults}
}

// pinned serialises the runs of one test process (oneProcessor).
var pinned sync.Mutex

// oneProcessor runs Go on one processor until the returned function is
// called, and lets one run at a time hold it. The server takes one step
// at a time (sim.WithSteps), and a step may wake several goroutines of one
// process (go-zookeeper's receive loop and a caller, a session's expiry
// handling and a request): on one processor Go runs the goroutines made
// ready at one step in an order fixed by the order they were made ready, so what they do
// before the next step comes in one order; on two they would run in
// parallel, and a replay could part from its run. Another run in the same
// process would interleave its goroutines with this one's, so runs wait
// for each other. Go does not promise that order (a goroutine preempted
// after running 10 ms goes to the back of the queue), so a workload must
// not decide from what another process did at the same virtual instant:
// it counts what happened before it (the search's own workloads use the
// virtual clock for that). Other goroutines of the test process (a parallel test)
// run on that one processor meanwhile.
func oneProcessor() (release func()) {
	pinned.Lock()
	prev := goruntime.GOMAXPROCS(1)
	return func() {
		goruntime.GOMAXPROCS(prev)
		pinned.Unlock()
	}
}

// errStopRun ends a run from its workload's goroutine (Run.Fatalf).
type errStopRun struct{}

// RunOnce runs w under cfg once, in a synctest bubble of its own, on one
// processor (GOMAXPROCS is 1 until it returns, and one run of the test
// process runs at a time; see oneProcessor), and returns the run: its
// history, faults and violations. It does not fail
// t on a violation (Search does); t fails if the bubble does (a goroutine
// of the run left blocked).
func RunOnce(t *testing.T, w Workload, cfg Config) *Run {
	r := &Run{Config: cfg, w: w}
	defer oneProcessor()()
	synctest.Test(t, func(*testing.T) {
		defer time.Sleep(time.Minute) // the goroutines that outlive closed sessions end
		defer func() {
			if r.srv != nil {
				r.Calm()
				r.srv.Close()
			}
		}()
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(errStopRun); !ok {
					panic(p)
				}
			}
		}()
		r.start = time.Now()
		w.Run(r)
		r.took = time.Since(r.start)
	})
	return r
}
