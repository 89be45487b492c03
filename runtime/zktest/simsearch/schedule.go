package simsearch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// A schedule file keeps what a failing run's seed decided, for a replay
// on later code (ZKGEN_SIM_REPLAY_FILE): the workload and its
// configuration, the request faults as they fired (which request of which
// session, and how), the chaos events (each with its pause, its target
// and its length, and as the history's lines say them), and the history
// with its hash. A replay forces the saved request faults
// (sim.WithFaultPlan) and chaos events (sim.Chaos.Plan) whatever the seed
// would draw on the changed code, and compares each run's history with
// the saved one. A forced chaos event whose sessions are not live in the
// replay leaves them alone, and says so in the history.
type schedule struct {
	Workload  string           `json:"workload"`
	Config    string           `json:"config"`
	Faults    []sim.Fault      `json:"faults"`
	ChaosPlan []sim.ChaosEvent `json:"chaos_events"`
	Chaos     []string         `json:"chaos"`
	Hash      string           `json:"hash"`
	History   []string         `json:"history"`
}

// saveSchedule writes r's schedule to a file of its own in
// ZKGEN_SIM_SCHEDULES (default: the system's temporary directory) and
// returns its name.
func saveSchedule(w Workload, cfg Config, r *Run) (string, error) {
	tl := r.History()
	sc := schedule{Workload: w.Name, Config: cfg.String(), Faults: r.Faults(), ChaosPlan: r.ChaosEvents(),
		Hash: fmt.Sprintf("%016x", Hash(tl)), History: tl}
	for _, e := range r.entries() {
		if e.who == -1 && strings.HasPrefix(e.text, "chaos: ") {
			sc.Chaos = append(sc.Chaos, e.String())
		}
	}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return "", err
	}
	dir := os.Getenv("ZKGEN_SIM_SCHEDULES")
	if dir == "" {
		dir = os.TempDir()
	}
	file := filepath.Join(dir, fmt.Sprintf("zkgen-sim-%s-%d.json", w.Name, cfg.Seed))
	return file, os.WriteFile(file, append(b, '\n'), 0o644)
}

// replaySchedule replays schedule file ZKGEN_SIM_REPLAYS times, its
// request faults forced.
func (s *searcher) replaySchedule(file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		s.t.Fatal(err)
	}
	var sc schedule
	if err := json.Unmarshal(b, &sc); err != nil {
		s.t.Fatalf("%s: %v", file, err)
	}
	w := s.workload(sc.Workload)
	cfg, err := ParseConfig(sc.Config)
	if err != nil {
		s.t.Fatalf("%s: %v", file, err)
	}
	cfg.Plan = sc.Faults
	if cfg.Plan == nil {
		cfg.Plan = []sim.Fault{} // none fired: none fires
	}
	cfg.ChaosPlan = sc.ChaosPlan
	if cfg.ChaosPlan == nil && len(sc.Chaos) == 0 {
		cfg.ChaosPlan = []sim.ChaosEvent{} // none happened: none happens
	} // a file from before the events were saved has only their lines: drawn from the seed again
	fmt.Printf("sim: replaying %s: %s %s, %d request faults and %d chaos events forced, history %s (%d lines)\n",
		file, sc.Workload, sc.Config, len(sc.Faults), len(sc.ChaosPlan), sc.Hash, len(sc.History))
	s.replayRuns(w, cfg, &sc)
}

// compare reports whether run k's history tl is the schedule's, and where
// they part if not (nothing without a schedule).
func (sc *schedule) compare(k int, tl []string) {
	if sc == nil {
		return
	}
	if h := fmt.Sprintf("%016x", Hash(tl)); h == sc.Hash {
		fmt.Printf("sim: run %d: the saved history\n", k)
		return
	}
	fmt.Printf("sim: run %d: not the saved history; %s", k, Divergence(sc.History, tl))
}
