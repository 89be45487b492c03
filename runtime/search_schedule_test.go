package runtime_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// A schedule file keeps what a failing run's seed decided, for a replay
// on later code (bash .ci/sim replay FILE): the workload and its
// configuration, the request faults as they fired (which request of which
// session, and how), the chaos events, and the history with its hash. A
// replay forces the saved request faults (sim.WithFaultPlan) whatever the
// seed would draw on the changed code, and compares each run's history
// with the saved one. The chaos events are drawn again from the seed:
// they repeat as long as the sessions live at each event are those of the
// saved run.
type schedule struct {
	Workload string      `json:"workload"`
	Config   string      `json:"config"`
	Faults   []sim.Fault `json:"faults"`
	Chaos    []string    `json:"chaos"`
	Hash     string      `json:"hash"`
	History  []string    `json:"history"`
}

// saveSchedule writes r's schedule to a file of its own in
// ZKGEN_SIM_SCHEDULES (default: the system's temporary directory) and
// returns its name.
func saveSchedule(w workload, cfg searchConfig, r *searchRun) (string, error) {
	tl := r.timeline()
	sc := schedule{Workload: w.name, Config: cfg.String(), Faults: r.faults(), Hash: fmt.Sprintf("%016x", hashOf(tl)), History: tl}
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
	file := filepath.Join(dir, fmt.Sprintf("zkgen-sim-%s-%d.json", w.name, cfg.Seed))
	return file, os.WriteFile(file, append(b, '\n'), 0o644)
}

// replaySchedule replays the schedule file ZKGEN_SIM_REPLAY_FILE names
// ZKGEN_SIM_REPLAYS times, its request faults forced.
func replaySchedule(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc schedule
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	ws := selectWorkloads(t, []string{sc.Workload})
	cfg, err := parseSearchConfig(sc.Config)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cfg.Plan = sc.Faults
	if cfg.Plan == nil {
		cfg.Plan = []sim.Fault{} // none fired: none fires
	}
	fmt.Printf("sim: replaying %s: %s %s, %d request faults forced, history %s (%d lines)\n",
		file, sc.Workload, sc.Config, len(sc.Faults), sc.Hash, len(sc.History))
	replayRuns(t, ws[0], cfg, &sc)
}

// compare reports whether run k's history tl is the schedule's, and where
// they part if not (nothing without a schedule).
func (sc *schedule) compare(k int, tl []string) {
	if sc == nil {
		return
	}
	if h := fmt.Sprintf("%016x", hashOf(tl)); h == sc.Hash {
		fmt.Printf("sim: run %d: the saved history\n", k)
		return
	}
	fmt.Printf("sim: run %d: not the saved history; %s", k, divergence(sc.History, tl))
}

// A saved schedule replays to its history with its faults forced, though
// the configuration would now draw others: here a rate six times as
// high, which without the plan runs to another history.
func TestScheduleForcesTheSavedFaults(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector shuffles goroutines on purpose")
	}
	t.Setenv("ZKGEN_SIM_SCHEDULES", t.TempDir())
	w := selectWorkloads(t, []string{"lock"})[0]
	cfg := searchConfig{Seed: 5, Procs: 3, Ops: 6, Rate: 0.05, Chaos: 2}
	file, err := saveSchedule(w, cfg, runOnce(t, w, cfg))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc schedule
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Faults) == 0 || len(sc.Chaos) == 0 {
		t.Fatalf("the schedule has %d faults and %d chaos events; the test wants both", len(sc.Faults), len(sc.Chaos))
	}
	later := cfg
	later.Rate = 0.3
	if tl := runOnce(t, w, later).timeline(); fmt.Sprintf("%016x", hashOf(tl)) == sc.Hash {
		t.Fatalf("rate 0.3 ran to the history of rate 0.05; the test cannot tell a forced plan")
	}
	later.Plan = sc.Faults
	if tl := runOnce(t, w, later).timeline(); fmt.Sprintf("%016x", hashOf(tl)) != sc.Hash {
		t.Errorf("the schedule's faults forced did not replay its history: %s", divergence(sc.History, tl))
	}
}
