package runtime_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// The search for bugs on the simulator (bash .ci/sim; docs/reliability.md, "Searching
// for bugs"). Each workload (search_sim_test.go) runs several simulated
// processes of one recipe on an in-process ZooKeeper under a fault
// schedule drawn from a seed, on virtual time (testing/synctest), records
// what the processes saw, and checks the recipe's contract on that record.
// TestSimSearch explores seeds; a failing run is shrunk (fewer processes,
// fewer operations, fewer faults) while it still fails, and reported with
// the command that replays it.
//
// Environment (set by .ci/sim):
//
//	ZKGEN_SIM_DURATION  search this long (a Go duration); unset: one run of
//	                    seed 1 per workload, as part of go test ./runtime
//	ZKGEN_SIM_RECIPES   the workloads to search, space-separated names or
//	                    prefixes ("queue" selects queue-fifo, ...); all if empty
//	ZKGEN_SIM_START     the first seed (default: from the clock, printed)
//	ZKGEN_SIM_FAULTS    the chaos faults to draw, '+'-separated names of
//	                    sim.ChaosFaults ("replace+rolling"); all if empty
//	ZKGEN_SIM_REPLAY    "RECIPE CONFIG": replay one run instead of searching
//	ZKGEN_SIM_REPLAYS   how many times a replay runs (default 10)
//	ZKGEN_SIM_REPLAY_FILE a schedule file to replay (search_schedule_test.go)
//	ZKGEN_SIM_SCHEDULES where a failure's schedule file goes (default: $TMPDIR)
//	ZKGEN_SIM_SHRINK    the wall time shrinking may take (default 2m)
//	ZKGEN_SIM_RECHECK   run every n-th seed of a deterministic workload again
//	                    and compare the histories (default 10; 0: never)
//	ZKGEN_SIM_STEPS     put every step of the server in the history
//	ZKGEN_SIM_HISTORIES a directory: a replay writes each distinct history there

// workload is one recipe's search.
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
	// (searchConfig.Faults; sim.Chaos.Faults).
	faults []string
}

// searchConfig is what fixes a run: the seed and the size.
type searchConfig struct {
	Seed   uint64
	Procs  int
	Ops    int
	Rate   float64
	Limit  int      // at most this many faults (0: no limit)
	Skip   []string // faults left out (sim.Fault.ID)
	Chaos  int      // partitions of sessions and servers (searchRun.chaos)
	Faults []string // the chaos faults drawn (sim.Chaos.Faults); all if none
	// Plan forces a saved run's request faults (a schedule file's) instead
	// of drawing them from Seed (sim.WithFaultPlan); not in String.
	Plan []sim.Fault
}

func (c searchConfig) String() string {
	s := fmt.Sprintf("seed=%d,procs=%d,ops=%d,rate=%g,chaos=%d", c.Seed, c.Procs, c.Ops, c.Rate, c.Chaos)
	if c.Limit > 0 {
		s += fmt.Sprintf(",limit=%d", c.Limit)
	}
	if len(c.Skip) > 0 {
		s += ",skip=" + strings.Join(c.Skip, "+")
	}
	if len(c.Faults) > 0 {
		s += ",faults=" + strings.Join(c.Faults, "+")
	}
	return s
}

// parseFaults reads '+'-separated chaos fault names (sim.ChaosFaults).
func parseFaults(v string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(v, "+") {
		if f == "" {
			continue
		}
		if !slices.Contains(sim.ChaosFaults(), f) {
			return nil, fmt.Errorf("no chaos fault %q; there are: %s", f, strings.Join(sim.ChaosFaults(), " "))
		}
		out = append(out, f)
	}
	return out, nil
}

func parseSearchConfig(s string) (searchConfig, error) {
	var c searchConfig
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("config %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "seed":
			c.Seed, err = strconv.ParseUint(v, 10, 64)
		case "procs":
			c.Procs, err = strconv.Atoi(v)
		case "ops":
			c.Ops, err = strconv.Atoi(v)
		case "rate":
			c.Rate, err = strconv.ParseFloat(v, 64)
		case "limit":
			c.Limit, err = strconv.Atoi(v)
		case "skip":
			c.Skip = strings.Split(v, "+")
		case "chaos":
			c.Chaos, err = strconv.Atoi(v)
		case "faults":
			c.Faults, err = parseFaults(v)
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return c, fmt.Errorf("config %q: %s: %v", s, k, err)
		}
	}
	if c.Seed == 0 || c.Procs <= 0 || c.Ops <= 0 {
		return c, fmt.Errorf("config %q: seed, procs and ops are required", s)
	}
	return c, nil
}

// violation is one broken promise.
type violation struct {
	invariant string // the promise, in a few words
	detail    string
}

// errStopRun ends a run from its workload's goroutine (searchRun.Fatalf).
type errStopRun struct{}

// histEntry is one line of a run's history: when (the virtual time since
// the start, then the server's steps taken by then: sim.WithSteps), who
// (a process; -1 the chaos and the harness; -2 a fault), and its place in
// the record. A history is in that order: what processes record between
// two steps of the server is in process order, whatever order Go's
// scheduler ran them in.
type histEntry struct {
	at   time.Duration
	step uint64
	who  int
	seq  int
	text string
}

func (e histEntry) String() string {
	p := fmt.Sprintf("p%d", e.who)
	switch e.who {
	case -1:
		p = "--"
	case -2:
		p = "fault"
	}
	return fmt.Sprintf("%9.3fs %s %s", e.at.Seconds(), p, e.text)
}

func byHistory(a, b histEntry) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.step, b.step), cmp.Compare(a.who, b.who), cmp.Compare(a.seq, b.seq))
}

// searchRun is one run of a workload: its configuration, the server, and
// what the processes saw.
type searchRun struct {
	recipe   string
	cfg      searchConfig
	ens      int
	reap     bool // the workload's reap: see reaper
	hold     time.Duration
	chaosMix []string // the workload's chaos faults, unless cfg names some
	start    time.Time
	took     time.Duration // the virtual time the run took (runOnce)
	srv      *sim.Server

	stopChaos  func()         // calm: the chaos stops
	crashed    map[int64]bool // sessions of crashed processes (crash)
	mu         sync.Mutex
	lost       int         // sessions that expired under a process (simSession.get)
	history    []histEntry // what happened
	violations []violation
	logs       []string
	sessions   []*simSession
}

// server starts the run's server with its fault schedule, and whatever
// else the workload needs.
func (r *searchRun) server(opts ...sim.Option) *sim.Server {
	opts = append(opts, sim.WithRandomFaults(r.cfg.Seed, r.cfg.Rate))
	if r.cfg.Limit > 0 {
		opts = append(opts, sim.WithFaultLimit(r.cfg.Limit))
	}
	if r.cfg.Plan != nil {
		opts = append(opts, sim.WithFaultPlan(r.cfg.Plan))
	}
	if len(r.cfg.Skip) > 0 {
		opts = append(opts, sim.WithoutFaults(r.cfg.Skip...))
	}
	opts = append(opts, sim.WithSteps())    // one thing at a time: a replay repeats the run
	if os.Getenv("ZKGEN_SIM_STEPS") != "" { // every step of the server in the history
		opts = append(opts, sim.WithStepLog(func(n uint64, what string) { r.event(-1, "step %d: %s", n, what) }))
	}
	r.srv = sim.NewEnsemble(max(r.ens, 1), opts...)
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0xd1a7))
	for i := 1; i < r.ens; i++ { // followers behind the leader from the start
		d := time.Duration(rng.IntN(200)) * time.Millisecond
		r.srv.SetDelay(i, d)
		r.event(-1, "server %d lags %v", i, d)
	}
	// Sessions and servers cut off, lagging followers (sim.StartChaos);
	// a crashed process's session is spared: it stays dead.
	faults := r.cfg.Faults
	if len(faults) == 0 {
		faults = r.chaosMix
	}
	r.stopChaos = r.srv.StartChaos(sim.Chaos{Seed: r.cfg.Seed, Events: r.cfg.Chaos, Faults: faults,
		Spare: r.isCrashed, Log: func(what string) { r.event(-1, "%s", what) }})
	return r.srv
}

// calm stops the random faults and the chaos (a workload's quiet end):
// cut-off sessions and servers are let through again.
func (r *searchRun) calm() {
	r.srv.SetFaultRate(0)
	r.stopChaos()
}

// session returns process who's session keeper on the run's server;
// finish closes it. Its sessions draw their random choices (GUIDs,
// back-off jitter, server order) from the run's seed and who, one stream
// per session (runtime.WithRandomSeed): a replay makes the same ones.
func (r *searchRun) session(who int) *simSession {
	w := &simSession{srv: r.srv, run: r, who: who, seed: runtime.WithRandomSeed(r.procSeed(who))}
	r.mu.Lock()
	r.sessions = append(r.sessions, w)
	// In process order, not the order the processes asked in: the harness
	// closes them in this order.
	slices.SortStableFunc(r.sessions, func(a, b *simSession) int { return cmp.Compare(a.who, b.who) })
	r.mu.Unlock()
	return w
}

// procSeed is the seed of process who's sessions' random choices.
func (r *searchRun) procSeed(who int) uint64 { return r.cfg.Seed<<20 ^ uint64(who+1) }

// since is the virtual time since the run started.
func (r *searchRun) since(t time.Time) string {
	return fmt.Sprintf("%9.3fs", t.Sub(r.start).Seconds())
}

// event adds a line to the history: process who did or saw something
// (-1: the chaos, or the harness).
func (r *searchRun) event(who int, format string, args ...any) {
	e := histEntry{at: time.Since(r.start), who: max(who, -1), text: fmt.Sprintf(format, args...)}
	if r.srv != nil {
		e.step = r.srv.Steps()
	}
	r.mu.Lock()
	e.seq = len(r.history)
	r.history = append(r.history, e)
	r.mu.Unlock()
}

// violate records a broken promise; the run goes on.
func (r *searchRun) violate(invariant, format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, violation{invariant, fmt.Sprintf(format, args...)})
	r.mu.Unlock()
}

// stall records that the processes did not get their work done within the
// run's bound of virtual time (the progress promise), and ends the run.
func (r *searchRun) stall(format string, args ...any) {
	if os.Getenv("ZKGEN_SIM_STACKS") != "" { // where everyone waits
		buf := make([]byte, 1<<22)
		format += "\n%s"
		args = append(args, buf[:goruntime.Stack(buf, true)])
	}
	r.violate("progress", format, args...)
	panic(errStopRun{})
}

// Fatalf ends the run on a failure of the harness itself.
func (r *searchRun) Fatalf(format string, args ...any) {
	r.violate("harness", format, args...)
	panic(errStopRun{})
}

// Logf keeps a line for the report.
func (r *searchRun) Logf(format string, args ...any) {
	r.mu.Lock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *searchRun) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.violations) > 0
}

func (r *searchRun) isCrashed(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.crashed[id]
}

// faults are the faults that fired in the run.
func (r *searchRun) faults() []sim.Fault {
	if r.srv == nil {
		return nil
	}
	return r.srv.FaultLog()
}

// entries merges the processes' history with the faults, in the
// history's order (histEntry).
func (r *searchRun) entries() []histEntry {
	r.mu.Lock()
	es := slices.Clone(r.history)
	r.mu.Unlock()
	for i, f := range r.faults() {
		es = append(es, histEntry{at: f.At.Sub(r.start), step: f.Step, who: -2, seq: i, text: f.String()})
	}
	slices.SortFunc(es, byHistory)
	return es
}

// timeline is the run's history, line by line (entries).
func (r *searchRun) timeline() []string { return lines(r.entries()) }

func lines(es []histEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.String()
	}
	return out
}

// finish ends every run the same way, after its processes released what
// they held and stopped (the faults are off by then):
//
//   - no orphan of a live session: after settle (virtual time for
//     releases carried on in the background), no ephemeral node under root
//     belongs to a live session — no handle owns it any more;
//   - nothing left behind: once every session is closed and the server
//     reaped containers, every node under root that is left is the
//     recipe's durable state (path.Match patterns in durable).
func (r *searchRun) finish(root string, settle time.Duration, durable ...string) {
	r.quiet(root, settle, durable...)
	r.mu.Lock()
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	for _, w := range sessions {
		w.close()
	}
	time.Sleep(2 * time.Minute) // containers reaped, sessions closed
	for _, n := range r.walk(root) {
		if n.kids > 0 {
			continue
		}
		if !matchAny(durable, n.path) {
			r.violate("nothing left behind", "%s is left after every process ended (owner %x, data %q)", n.path, n.owner, n.data)
		}
	}
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if m, _ := path.Match(pat, p); m {
			return true
		}
	}
	return false
}

// quiet stops the faults, waits settle, and checks that no ephemeral node
// under root belongs to a live session (see finish), but the ones durable
// matches: the recipe keeps them for the session's life by contract.
func (r *searchRun) quiet(root string, settle time.Duration, durable ...string) {
	r.calm()
	time.Sleep(settle)
	live := map[int64]bool{}
	for _, id := range r.srv.Sessions() {
		live[id] = true
	}
	for _, n := range r.walk(root) {
		if n.owner != 0 && live[n.owner] && !matchAny(durable, n.path) {
			r.violate("no orphan of a live session", "%s (session %x) is left after every process released", n.path, n.owner)
		}
	}
}

type simNode struct {
	path  string
	owner int64
	kids  int
	data  string
}

// walk lists the nodes under root (root included) on a session of its own.
func (r *searchRun) walk(root string) []simNode {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := runtime.Connect(ctx, r.srv.Servers(), runtime.WithDialer(r.srv.DialerFor("walk")),
		runtime.WithLogger(slog.New(slog.DiscardHandler)), runtime.WithRandomSeed(r.procSeed(-2)))
	if err != nil {
		r.Fatalf("walking %s: %v", root, err)
	}
	defer s.Close()
	var out []simNode
	var walk func(p string)
	walk = func(p string) {
		data, st, err := s.Conn().Get(p)
		if err != nil {
			return // gone meanwhile, or never there
		}
		kids, _, _ := s.Conn().Children(p)
		slices.Sort(kids)
		if len(data) > 40 {
			data = data[:40]
		}
		out = append(out, simNode{p, st.EphemeralOwner, len(kids), string(data)})
		for _, k := range kids {
			walk(path.Join(p, k))
		}
	}
	walk(root)
	return out
}

// runOnce runs w under cfg in a bubble of its own.
func runOnce(t *testing.T, w workload, cfg searchConfig) *searchRun {
	r := &searchRun{recipe: w.name, cfg: cfg, ens: w.ensemble, reap: w.reap, hold: w.hold, chaosMix: w.faults}
	synctest.Test(t, func(*testing.T) {
		defer settleBubble()
		defer func() {
			if r.srv != nil {
				r.calm()
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
		w.run(r)
		r.took = time.Since(r.start)
	})
	return r
}

// config is the workload's configuration for seed, with the chaos faults
// ZKGEN_SIM_FAULTS names (checked by TestSimSearch).
func (w workload) config(seed uint64) searchConfig {
	faults, _ := parseFaults(os.Getenv("ZKGEN_SIM_FAULTS"))
	return searchConfig{Seed: seed, Procs: w.procs, Ops: w.ops, Rate: w.rate, Chaos: 4, Faults: faults}
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

func TestSimSearch(t *testing.T) {
	if spec := os.Getenv("ZKGEN_SIM_REPLAY"); spec != "" {
		replaySearch(t, spec)
		return
	}
	if file := os.Getenv("ZKGEN_SIM_REPLAY_FILE"); file != "" {
		replaySchedule(t, file)
		return
	}
	ws := selectWorkloads(t, strings.Fields(os.Getenv("ZKGEN_SIM_RECIPES")))
	if _, err := parseFaults(os.Getenv("ZKGEN_SIM_FAULTS")); err != nil {
		t.Fatalf("ZKGEN_SIM_FAULTS: %v", err)
	}
	d, err := time.ParseDuration(os.Getenv("ZKGEN_SIM_DURATION"))
	if err != nil || d <= 0 {
		// Part of the suite: seed 1 of every workload.
		for _, w := range ws {
			t.Run(w.name, func(t *testing.T) {
				if r := runOnce(t, w, w.config(1)); r.failed() {
					report(t, w, r, r.cfg, 0)
				}
			})
		}
		return
	}
	start := uint64(time.Now().UnixNano()%1_000_000_000) + 1
	if s, err := strconv.ParseUint(os.Getenv("ZKGEN_SIM_START"), 10, 64); err == nil && s > 0 {
		start = s
	}
	fmt.Printf("sim: searching %d workloads for %v from seed %d (chaos faults: %s)\n", len(ws), d, start,
		cmp.Or(os.Getenv("ZKGEN_SIM_FAULTS"), "all"))
	type tally struct {
		seeds   int
		wall    time.Duration
		fault   int
		lost    int
		virtual time.Duration // simulated
		checked int           // seeds run again to check that they replay
	}
	tallies := make([]tally, len(ws))
	began := time.Now()
	deadline, lastNote := began.Add(d), began
	for k := uint64(0); time.Now().Before(deadline); k++ {
		for i, w := range ws {
			cfg := w.config(start + k)
			t0 := time.Now()
			r := runOnce(t, w, cfg)
			tallies[i].seeds++
			tallies[i].wall += time.Since(t0)
			tallies[i].fault += len(r.faults())
			tallies[i].lost += r.lost
			tallies[i].virtual += r.took
			if r.failed() {
				fmt.Printf("sim: %s: seed %d failed after %v of search; running it again\n", w.name, cfg.Seed, time.Since(began).Round(time.Second))
				if checkReplay(t, w, cfg, r) {
					fmt.Printf("sim: it replays to history %016x; shrinking\n", hashOf(r.timeline()))
				}
				small, sr, tries := shrink(t, w, cfg, r)
				report(t, w, sr, small, tries)
				return
			}
			checked, ok := recheck(t, w, k, cfg, r)
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
	wall := time.Since(began)
	fmt.Printf("sim: %v of search, 0 violations\n", wall.Round(time.Second))
	// seeds/min alone: the rate of a search of that workload by itself.
	// lost: sessions the processes saw expire (or give up by their own
	// clock) and replaced; a crashed process's session is not counted.
	// replayed: seeds run again to check that they replay; sim/real: the
	// simulated time per second of wall time.
	fmt.Printf("%-20s %7s %10s %16s %8s %6s %9s %8s\n", "recipe", "seeds", "ms/seed", "seeds/min alone", "faults", "lost", "replayed", "sim/real")
	for i, w := range ws {
		ta := tallies[i]
		per := ta.wall.Seconds() * 1000 / float64(ta.seeds)
		fmt.Printf("%-20s %7d %10.1f %16.0f %8d %6d %9d %8.0f\n", w.name, ta.seeds, per, 60000/per, ta.fault, ta.lost, ta.checked, ta.virtual.Seconds()/ta.wall.Seconds())
	}
}

// fails runs cfg until need runs failed or more than tries-need passed,
// and returns the first failing run if need failed.
func fails(t *testing.T, w workload, cfg searchConfig, need, tries int) *searchRun {
	var first *searchRun
	failed, passed := 0, 0
	for failed < need && passed <= tries-need {
		if r := runOnce(t, w, cfg); r.failed() {
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
func shrink(t *testing.T, w workload, cfg searchConfig, r *searchRun) (searchConfig, *searchRun, int) {
	budget := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("ZKGEN_SIM_SHRINK")); err == nil {
		budget = d
	}
	deadline := time.Now().Add(budget)
	tries := 0
	try := func(c searchConfig) bool {
		if time.Now().After(deadline) {
			return false
		}
		tries++
		if fr := shrinkFails(t, w, c); fr != nil {
			cfg, r = c, fr
			return true
		}
		return false
	}
	for progress := true; progress && time.Now().Before(deadline); {
		progress = false
		var cands []searchConfig
		if c := cfg; c.Procs > max(w.minProcs, 1) {
			c.Procs--
			cands = append(cands, c)
		}
		if c := cfg; c.Ops > 1 {
			c.Ops = max(1, c.Ops/2)
			cands = append(cands, c)
			c.Ops = cfg.Ops - 1
			cands = append(cands, c)
		}
		fired := len(r.faults())
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
		for _, c := range cands {
			if try(c) {
				progress = true
				break
			}
		}
		if progress {
			continue
		}
		for _, f := range r.faults() { // each fault left out in turn
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

// report prints a failing run: the recipe, its configuration, the broken
// promises, the history, how often a replay fails, and the command that
// replays it; and fails the test.
func report(t *testing.T, w workload, r *searchRun, cfg searchConfig, shrinkTries int) {
	t.Helper()
	var b strings.Builder
	if orig := w.config(cfg.Seed); shrinkTries > 0 {
		again := 0
		for range 10 {
			if runOnce(t, w, orig).failed() {
				again++
			}
		}
		fmt.Fprintf(&b, "\nsim: before shrinking: %s failed %d of 10 replays (bash .ci/sim replay %s %s)", orig, again, w.name, orig)
	}
	fmt.Fprintf(&b, "\nsim: VIOLATION in %s, seed %d (%s)\n", w.name, cfg.Seed, cfg)
	if shrinkTries > 0 {
		fmt.Fprintf(&b, "shrunk in %d tries to %d processes, %d operations each, %d faults, %d chaos events\n",
			shrinkTries, cfg.Procs, cfg.Ops, len(r.faults()), cfg.Chaos)
	}
	for _, v := range r.violations {
		fmt.Fprintf(&b, "  broken: %s: %s\n", v.invariant, v.detail)
	}
	fmt.Fprintf(&b, "history (virtual seconds since the start):\n")
	tl := r.timeline()
	for _, l := range tl {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	for _, l := range r.logs {
		fmt.Fprintf(&b, "  log: %s\n", l)
	}
	fmt.Fprintf(&b, "history hash %016x (%d lines)\n", hashOf(tl), len(tl))
	again, other := 0, 0
	for range 10 {
		rr := runOnce(t, w, cfg)
		if rr.failed() {
			again++
		}
		if hashOf(rr.timeline()) != hashOf(tl) {
			other++
		}
	}
	fmt.Fprintf(&b, "replayed 10 times: failed %d\n", again)
	fmt.Fprintf(&b, "replays to another history: %d of 10\n", other)
	fmt.Fprintf(&b, "replay: bash .ci/sim replay %s %s\n", w.name, cfg)
	if file, err := saveSchedule(w, cfg, r); err != nil {
		fmt.Fprintf(&b, "schedule: not saved: %v\n", err)
	} else {
		fmt.Fprintf(&b, "schedule: %s (replay it on later code: bash .ci/sim replay %s)\n", file, file)
	}
	fmt.Print(b.String())
	t.Fatalf("%s: %s broken (seed %d)", w.name, r.violations[0].invariant, cfg.Seed)
}

// replaySearch runs one configuration ZKGEN_SIM_REPLAYS times and fails if
// any run fails, reporting the first.
func replaySearch(t *testing.T, spec string) {
	name, c, ok := strings.Cut(strings.TrimSpace(spec), " ")
	if !ok {
		t.Fatalf("ZKGEN_SIM_REPLAY=%q: want \"RECIPE CONFIG\"", spec)
	}
	ws := selectWorkloads(t, []string{name})
	cfg, err := parseSearchConfig(strings.TrimSpace(c))
	if err != nil {
		t.Fatal(err)
	}
	replayRuns(t, ws[0], cfg, nil)
}

// replayRuns runs cfg ZKGEN_SIM_REPLAYS times, and compares each run's
// history with saved's (a schedule file's; nil: none).
func replayRuns(t *testing.T, w workload, cfg searchConfig, saved *schedule) {
	ws := []workload{w}
	n := 10
	if k, err := strconv.Atoi(os.Getenv("ZKGEN_SIM_REPLAYS")); err == nil && k > 0 {
		n = k
	}
	var first *searchRun
	failed := 0
	histories := map[uint64][]string{} // how deterministic: the distinct histories
	var order []uint64                 // the distinct hashes, by the first run with each
	runOf := map[uint64]int{}
	for k := range n {
		r := runOnce(t, ws[0], cfg)
		tl := r.timeline()
		h := hashOf(tl)
		fmt.Printf("sim: run %d of %d: history %016x (%d lines, failed %v)\n", k+1, n, h, len(tl), r.failed())
		saved.compare(k+1, tl)
		if histories[h] == nil {
			histories[h], order, runOf[h] = tl, append(order, h), k+1
			if dir := os.Getenv("ZKGEN_SIM_HISTORIES"); dir != "" { // each distinct history, to compare
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%016x.txt", ws[0].name, h)), []byte(strings.Join(tl, "\n")+"\n"), 0o644)
			}
		}
		if r.failed() {
			failed++
			if first == nil {
				first = r
			}
		}
	}
	fmt.Printf("sim: replay of %s %s: failed %d of %d runs; %d distinct histories\n", ws[0].name, cfg, failed, n, len(histories))
	if len(order) > 1 {
		fmt.Printf("sim: runs 1 and %d: %s", runOf[order[1]], divergence(histories[order[0]], histories[order[1]]))
	}
	if first != nil {
		report(t, ws[0], first, cfg, 0)
	}
}
