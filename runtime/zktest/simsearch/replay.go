package simsearch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// replayConfig runs the configuration spec ("NAME CONFIG") names
// ZKGEN_SIM_REPLAYS times and fails if any run fails, reporting the first.
func (s *searcher) replayConfig(spec string) {
	name, c, ok := strings.Cut(strings.TrimSpace(spec), " ")
	if !ok {
		s.t.Fatalf("ZKGEN_SIM_REPLAY=%q: want \"NAME CONFIG\"", spec)
	}
	w := s.workload(name)
	cfg, err := ParseConfig(strings.TrimSpace(c))
	if err != nil {
		s.t.Fatal(err)
	}
	s.replayRuns(w, cfg, nil)
}

// replayRuns runs cfg ZKGEN_SIM_REPLAYS times (default 10), and compares
// each run's history with saved's (a schedule file's; nil: none). It
// prints each run's history hash, then "failed F of N runs; H distinct
// histories", and where the first two distinct histories part.
func (s *searcher) replayRuns(w Workload, cfg Config, saved *schedule) {
	n := 10
	if k, err := strconv.Atoi(os.Getenv("ZKGEN_SIM_REPLAYS")); err == nil && k > 0 {
		n = k
	}
	var first *Run
	failed := 0
	histories := map[uint64][]string{} // how deterministic: the distinct histories
	var order []uint64                 // the distinct hashes, by the first run with each
	runOf := map[uint64]int{}
	for k := range n {
		r := RunOnce(s.t, w, cfg)
		tl := r.History()
		h := Hash(tl)
		fmt.Printf("sim: run %d of %d: history %016x (%d lines, failed %v)\n", k+1, n, h, len(tl), r.Failed())
		saved.compare(k+1, tl)
		if histories[h] == nil {
			histories[h], order, runOf[h] = tl, append(order, h), k+1
			if dir := os.Getenv("ZKGEN_SIM_HISTORIES"); dir != "" { // each distinct history, to compare
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%016x.txt", w.Name, h)), []byte(strings.Join(tl, "\n")+"\n"), 0o644)
			}
		}
		if r.Failed() {
			failed++
			if first == nil {
				first = r
			}
		}
	}
	fmt.Printf("sim: replay of %s %s: failed %d of %d runs; %d distinct histories\n", w.Name, cfg, failed, n, len(histories))
	if len(order) > 1 {
		fmt.Printf("sim: runs 1 and %d: %s", runOf[order[1]], Divergence(histories[order[0]], histories[order[1]]))
	}
	if first != nil {
		s.report(w, first, cfg, 0)
	}
}

// replayMismatch runs cfg again and compares its history with r's: ""
// when they are one, else the report of a mismatch, with where the
// histories part; and the two histories' hashes.
func (s *searcher) replayMismatch(w Workload, cfg Config, r *Run) (msg string, ha, hb uint64) {
	ea, eb := r.entries(), RunOnce(s.t, w, cfg).entries()
	a, b := lines(ea), lines(eb)
	ha, hb = Hash(a), Hash(b)
	if ha == hb {
		return "", ha, hb
	}
	i := firstDifference(a, b)
	where := "the end"
	for _, es := range [][]entry{ea, eb} {
		if i < len(es) {
			where = fmt.Sprintf("%.3f virtual seconds, the server's step %d", es[i].at.Seconds(), es[i].step)
			break
		}
	}
	return fmt.Sprintf("sim: REPLAY MISMATCH, a bug of the search itself: %s %s ran to history %016x, then to %016x (they part at %s); %s",
		w.Name, cfg, ha, hb, where, divergenceAt(a, b, i)), ha, hb
}

// checkReplay runs cfg again and compares its history with r's. A
// mismatch is printed as a bug of the search; it fails the test unless
// the workload says what it leaves to chance (Races). It
// reports whether the histories were one.
func (s *searcher) checkReplay(w Workload, cfg Config, r *Run) bool {
	s.t.Helper()
	msg, ha, hb := s.replayMismatch(w, cfg, r)
	if msg == "" {
		return true
	}
	fmt.Print(msg)
	if !w.Deterministic() {
		why := w.Races
		if !ReplaysExactly() {
			why = "the race detector shuffles goroutines"
		}
		fmt.Printf("sim: (%s leaves to chance: %s)\n", w.Name, why)
		return false
	}
	s.t.Errorf("%s: seed %d does not replay: history %016x, then %016x", w.Name, cfg.Seed, ha, hb)
	return false
}

// replayCheckEvery is how often the search runs a passing seed again to
// check that it replays (ZKGEN_SIM_RECHECK: every n-th seed of each
// deterministic workload, the first included; 0: never).
func replayCheckEvery() int {
	if n, err := strconv.Atoi(os.Getenv("ZKGEN_SIM_RECHECK")); err == nil && n >= 0 {
		return n
	}
	return 10
}

// recheck runs the k-th seed's configuration of w again when it is due
// (replayCheckEvery) and w is deterministic; it reports false on a
// mismatch (checkReplay has failed the test).
func (s *searcher) recheck(w Workload, k uint64, cfg Config, r *Run) (checked, ok bool) {
	every := replayCheckEvery()
	if !w.Deterministic() || every == 0 || k%uint64(every) != 0 {
		return false, true
	}
	return true, s.checkReplay(w, cfg, r)
}
