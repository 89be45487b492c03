package simsearch

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Options tune Search.
type Options struct {
	// Seeds is how many seeds (1, 2, ...) of each workload a plain go test
	// runs, without ZKGEN_SIM_DURATION (default 1).
	Seeds int
	// Command is what a report's replay line starts with, followed by the
	// workload's name and configuration, or by a schedule file's name.
	// Default: the go test command that replays it through
	// ZKGEN_SIM_REPLAY or ZKGEN_SIM_REPLAY_FILE.
	Command string
}

// Search runs the workloads under the faults their seeds draw and fails
// t on the first broken invariant, after running the seed again (a
// history that differs is a bug of the search, printed as such), shrinking
// it to the smallest configuration that still fails the same way, and
// printing the report: the seed, the broken invariants, the shrunk
// history with its hash, how often 10 replays fail, and the replay line.
// It blocks until done; each run is on virtual time. The environment
// chooses what it does:
//
//	(nothing)              seeds 1 to Options.Seeds of each workload, a subtest each
//	ZKGEN_SIM_DURATION=d   search new seeds (from ZKGEN_SIM_START, else the
//	                       clock) for d of wall time, then print a summary
//	ZKGEN_SIM_REPLAY="NAME CONFIG"
//	                       run that configuration ZKGEN_SIM_REPLAYS times (10)
//	ZKGEN_SIM_REPLAY_FILE  replay a schedule file a report saved, its faults forced
//	ZKGEN_SIM_FAULTS       the chaos faults to draw ("replace+rolling"; all if unset)
//	ZKGEN_SIM_SHRINK       the wall time shrinking may take (default 2m)
//	ZKGEN_SIM_SCHEDULES    where a report's schedule file goes (default $TMPDIR)
//	ZKGEN_SIM_RECHECK      run every n-th seed again and compare (default 10; 0: never)
func Search(t *testing.T, ws []Workload, opts Options) {
	t.Helper()
	s := &searcher{t: t, ws: ws, opts: opts}
	if spec := os.Getenv("ZKGEN_SIM_REPLAY"); spec != "" {
		s.replayConfig(spec)
		return
	}
	if file := os.Getenv("ZKGEN_SIM_REPLAY_FILE"); file != "" {
		s.replaySchedule(file)
		return
	}
	if _, err := ParseFaults(os.Getenv("ZKGEN_SIM_FAULTS")); err != nil {
		t.Fatalf("ZKGEN_SIM_FAULTS: %v", err)
	}
	d, err := time.ParseDuration(os.Getenv("ZKGEN_SIM_DURATION"))
	if err != nil || d <= 0 {
		for _, w := range ws { // part of the suite
			t.Run(w.Name, func(t *testing.T) {
				s := &searcher{t: t, ws: ws, opts: opts}
				for seed := uint64(1); seed <= uint64(max(opts.Seeds, 1)); seed++ {
					if r := RunOnce(t, w, w.Config(seed)); r.Failed() {
						s.found(w, r, time.Now())
						return
					}
				}
			})
		}
		return
	}
	s.search(d)
}

// searcher is one Search.
type searcher struct {
	t    *testing.T
	ws   []Workload
	opts Options
}

// workload is the workload called name, or else the first whose name
// starts with name and a dash.
func (s *searcher) workload(name string) Workload {
	for _, w := range s.ws {
		if w.Name == name {
			return w
		}
	}
	var all []string
	for _, w := range s.ws {
		if strings.HasPrefix(w.Name, name+"-") {
			return w
		}
		all = append(all, w.Name)
	}
	s.t.Fatalf("no workload %q; there are: %s", name, strings.Join(all, " "))
	return Workload{}
}

// replayLine is the command that replays args (a workload's name and
// configuration, or a schedule file).
func (s *searcher) replayLine(args string) string {
	if s.opts.Command != "" {
		return s.opts.Command + " " + args
	}
	env := "ZKGEN_SIM_REPLAY='" + args + "'"
	if !strings.Contains(args, " ") {
		env = "ZKGEN_SIM_REPLAY_FILE=" + args
	}
	dir, _ := os.Getwd()
	test, _, _ := strings.Cut(s.t.Name(), "/")
	return fmt.Sprintf("%s go test -count=1 -run '^%s$' %s", env, test, dir)
}

// found handles run r of w that failed: it runs the seed again to check
// that it replays, shrinks it, reports it and fails the test.
func (s *searcher) found(w Workload, r *Run, began time.Time) {
	s.t.Helper()
	fmt.Printf("sim: %s: seed %d failed after %v of search; running it again\n", w.Name, r.Config.Seed, time.Since(began).Round(time.Second))
	if s.checkReplay(w, r.Config, r) {
		fmt.Printf("sim: it replays to history %016x; shrinking\n", Hash(r.History()))
	}
	small, sr, tries := s.shrink(w, r.Config, r)
	s.report(w, sr, small, tries)
}

// tally is what a search did with one workload.
type tally struct {
	seeds   int
	wall    time.Duration
	fault   int
	lost    int
	virtual time.Duration // simulated
	checked int           // seeds run again to check that they replay
}

// search explores seeds for d of wall time, every workload in turn.
func (s *searcher) search(d time.Duration) {
	start := uint64(time.Now().UnixNano()%1_000_000_000) + 1
	if n, err := strconv.ParseUint(os.Getenv("ZKGEN_SIM_START"), 10, 64); err == nil && n > 0 {
		start = n
	}
	fmt.Printf("sim: searching %d workloads for %v from seed %d (chaos faults: %s)\n", len(s.ws), d, start,
		cmp.Or(os.Getenv("ZKGEN_SIM_FAULTS"), "all"))
	tallies := make([]tally, len(s.ws))
	began := time.Now()
	deadline, lastNote := began.Add(d), began
	for k := uint64(0); time.Now().Before(deadline); k++ {
		for i, w := range s.ws {
			cfg := w.Config(start + k)
			t0 := time.Now()
			r := RunOnce(s.t, w, cfg)
			tallies[i].add(r, time.Since(t0))
			if r.Failed() {
				s.found(w, r, began)
				return
			}
			checked, ok := s.recheck(w, k, cfg, r)
			if checked {
				tallies[i].checked++
			}
			if !ok {
				return // a bug of the search: checkReplay failed the test
			}
		}
		if time.Since(lastNote) >= time.Minute {
			lastNote = time.Now()
			n := 0
			for _, ta := range tallies {
				n += ta.seeds
			}
			fmt.Printf("sim: %v: %d runs, 0 violations\n", time.Since(began).Round(time.Second), n)
		}
	}
	s.summary(tallies, time.Since(began))
}

// add counts run r, which took wall of real time.
func (ta *tally) add(r *Run, wall time.Duration) {
	ta.seeds++
	ta.wall += wall
	ta.fault += len(r.Faults())
	ta.lost += r.Lost()
	ta.virtual += r.Took()
}

// summary prints a search's figures per workload. seeds/min alone: the
// rate of a search of that workload by itself. lost: sessions the
// processes saw expire (or give up by their own clock) and replaced; a
// crashed process's session is not counted. replayed: seeds run again to
// check that they replay; sim/real: the simulated time per second of wall
// time.
func (s *searcher) summary(tallies []tally, wall time.Duration) {
	fmt.Printf("sim: %v of search, 0 violations\n", wall.Round(time.Second))
	fmt.Printf("%-20s %7s %10s %16s %8s %6s %9s %8s\n", "recipe", "seeds", "ms/seed", "seeds/min alone", "faults", "lost", "replayed", "sim/real")
	for i, w := range s.ws {
		ta := tallies[i]
		per := ta.wall.Seconds() * 1000 / float64(ta.seeds)
		fmt.Printf("%-20s %7d %10.1f %16.0f %8d %6d %9d %8.0f\n", w.Name, ta.seeds, per, 60000/per, ta.fault, ta.lost, ta.checked, ta.virtual.Seconds()/ta.wall.Seconds())
	}
}
