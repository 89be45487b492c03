package simsearch

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// fails runs cfg until need runs failed or more than tries-need passed,
// and returns the first failing run if need failed.
func (s *searcher) fails(w Workload, cfg Config, need, tries int) *Run {
	var first *Run
	failed, passed := 0, 0
	for failed < need && passed <= tries-need {
		if r := RunOnce(s.t, w, cfg); r.Failed() {
			failed++
			if first == nil {
				first = r
			}
		} else {
			passed++
		}
	}
	if failed < need {
		return nil
	}
	return first
}

// shrink cuts cfg down while it still fails — fewer processes, fewer
// operations per process, fewer faults (a limit, then each fault left out
// in turn) — within ZKGEN_SIM_SHRINK of wall time. A candidate counts as
// failing if it fails twice to one history (shrinkFails): the shrunk
// configuration replays. It returns the smallest failing configuration,
// its run, and the candidates tried.
func (s *searcher) shrink(w Workload, cfg Config, r *Run) (Config, *Run, int) {
	budget := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("ZKGEN_SIM_SHRINK")); err == nil {
		budget = d
	}
	deadline := time.Now().Add(budget)
	tries := 0
	try := func(c Config) bool {
		if time.Now().After(deadline) {
			return false
		}
		tries++
		if fr := s.shrinkFails(w, c); fr != nil {
			cfg, r = c, fr
			return true
		}
		return false
	}
	for progress := true; progress && time.Now().Before(deadline); {
		progress = false
		for _, c := range smaller(w, cfg, len(r.Faults())) {
			if try(c) {
				progress = true
				break
			}
		}
		if progress {
			continue
		}
		for _, f := range r.Faults() { // each fault left out in turn
			c := cfg
			c.Skip = append(slices.Clone(cfg.Skip), f.ID)
			if try(c) {
				progress = true
				break
			}
		}
	}
	return cfg, r, tries
}

// smaller are the candidates one cut smaller than cfg, under which fired
// request faults fired: a process less, half or one less of the
// operations, the faults limited to those that fired or to half the
// limit, a chaos event less.
func smaller(w Workload, cfg Config, fired int) []Config {
	var cands []Config
	if c := cfg; c.Procs > max(w.MinProcs, 1) {
		c.Procs--
		cands = append(cands, c)
	}
	if c := cfg; c.Ops > 1 {
		c.Ops = max(1, c.Ops/2)
		cands = append(cands, c)
		c.Ops = cfg.Ops - 1
		cands = append(cands, c)
	}
	if c := cfg; fired > 0 && (c.Limit == 0 || c.Limit > fired) {
		c.Limit = fired
		cands = append(cands, c)
	}
	if c := cfg; c.Limit > 1 {
		c.Limit /= 2
		cands = append(cands, c)
	}
	if c := cfg; c.Chaos > 0 {
		c.Chaos--
		cands = append(cands, c)
	}
	return cands
}

// shrinkFails runs a candidate of shrinking: on a workload that replays
// (Workload.Races is empty), its run when it fails and a
// second run replays it to one history, else nil; elsewhere its first
// failing run if 2 of 4 runs fail (one failure in many would shrink to a
// configuration that rarely replays).
func (s *searcher) shrinkFails(w Workload, cfg Config) *Run {
	if !w.Deterministic() {
		return s.fails(w, cfg, 2, 4)
	}
	r := RunOnce(s.t, w, cfg)
	if !r.Failed() {
		return nil
	}
	if msg, _, _ := s.replayMismatch(w, cfg, r); msg != "" {
		fmt.Print(msg)
		return nil
	}
	return r
}

// report prints a failing run: the workload, its configuration, the
// broken invariants, the history, how often a replay fails, and the
// command that replays it; and fails the test.
func (s *searcher) report(w Workload, r *Run, cfg Config, shrinkTries int) {
	s.t.Helper()
	var b strings.Builder
	if orig := w.Config(cfg.Seed); shrinkTries > 0 {
		again := 0
		for range 10 {
			if RunOnce(s.t, w, orig).Failed() {
				again++
			}
		}
		fmt.Fprintf(&b, "\nsim: before shrinking: %s failed %d of 10 replays (%s)", orig, again, s.replayLine(w.Name+" "+orig.String()))
	}
	fmt.Fprintf(&b, "\nsim: VIOLATION in %s, seed %d (%s)\n", w.Name, cfg.Seed, cfg)
	if shrinkTries > 0 {
		fmt.Fprintf(&b, "shrunk in %d tries to %d processes, %d operations each, %d faults, %d chaos events\n",
			shrinkTries, cfg.Procs, cfg.Ops, len(r.Faults()), cfg.Chaos)
	}
	for _, v := range r.Violations() {
		fmt.Fprintf(&b, "  broken: %s: %s\n", v.Invariant, v.Detail)
	}
	fmt.Fprintf(&b, "history (virtual seconds since the start):\n")
	tl := r.History()
	for _, l := range tl {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	for _, l := range r.logs {
		fmt.Fprintf(&b, "  log: %s\n", l)
	}
	fmt.Fprintf(&b, "history hash %016x (%d lines)\n", Hash(tl), len(tl))
	s.replayTen(&b, w, cfg, Hash(tl))
	fmt.Fprintf(&b, "replay: %s\n", s.replayLine(w.Name+" "+cfg.String()))
	if file, err := saveSchedule(w, cfg, r); err != nil {
		fmt.Fprintf(&b, "schedule: not saved: %v\n", err)
	} else {
		fmt.Fprintf(&b, "schedule: %s (replay it on later code: %s)\n", file, s.replayLine(file))
	}
	fmt.Print(b.String())
	s.t.Fatalf("%s: %s broken (seed %d)", w.Name, r.Violations()[0].Invariant, cfg.Seed)
}

// replayTen runs cfg 10 times and writes how many runs failed and how many
// ran to another history than hash.
func (s *searcher) replayTen(b *strings.Builder, w Workload, cfg Config, hash uint64) {
	again, other := 0, 0
	for range 10 {
		rr := RunOnce(s.t, w, cfg)
		if rr.Failed() {
			again++
		}
		if Hash(rr.History()) != hash {
			other++
		}
	}
	fmt.Fprintf(b, "replayed 10 times: failed %d\n", again)
	fmt.Fprintf(b, "replays to another history: %d of 10\n", other)
}
