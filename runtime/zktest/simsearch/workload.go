package simsearch

import (
	"os"
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
	// RacesFrom, if above 0, is the processor count (GOMAXPROCS) from
	// which the workload's replays are known to differ, and Races says
	// what races: from there a replay mismatch is printed but does not
	// fail the search, and shrinking asks 2 failures in 4 runs.
	RacesFrom int
	Races     string
	// Run is one run: it starts the server (Run.Start), runs the
	// processes, records what they saw (Run.Event) and checks the
	// invariants (Run.Violate), for instance with Run.Finish at the end.
	// It runs in a testing/synctest bubble: time is virtual.
	Run func(r *Run)
}

// Deterministic reports whether w replays a seed to one history on procs
// processors (RacesFrom).
func (w Workload) Deterministic(procs int) bool {
	return w.RacesFrom == 0 || procs < w.RacesFrom
}

// Config is w's configuration for seed, with 4 chaos events and the chaos
// faults ZKGEN_SIM_FAULTS names (Search checks the variable).
func (w Workload) Config(seed uint64) Config {
	faults, _ := ParseFaults(os.Getenv("ZKGEN_SIM_FAULTS"))
	return Config{Seed: seed, Procs: w.Procs, Ops: w.Ops, Rate: w.Rate, Chaos: 4, Faults: faults}
}

// errStopRun ends a run from its workload's goroutine (Run.Fatalf).
type errStopRun struct{}

// RunOnce runs w under cfg once, in a synctest bubble of its own, and
// returns the run: its history, faults and violations. It does not fail
// t on a violation (Search does); t fails if the bubble does (a goroutine
// of the run left blocked).
func RunOnce(t *testing.T, w Workload, cfg Config) *Run {
	r := &Run{Config: cfg, w: w}
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
