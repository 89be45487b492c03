package simsearch

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// Run is one run of a workload: its configuration, the simulated server,
// and what the processes saw. Its methods may be called from any of the
// run's goroutines.
type Run struct {
	// Config is the run's configuration: Procs and Ops say how many
	// processes to run and how much each does.
	Config Config

	w         Workload
	start     time.Time
	took      time.Duration // the virtual time the run took (RunOnce)
	srv       *sim.Server
	stopChaos func()         // Calm: the chaos stops
	crashed   map[int64]bool // sessions of crashed processes (Crash)

	mu         sync.Mutex
	lost       int // sessions that expired under a process (Session.Get)
	history    []entry
	violations []Violation
	logs       []string
	sessions   []*Session
	chaos      []sim.ChaosEvent // the chaos events so far (sim.Chaos.Record)
}

// Violation is one broken promise.
type Violation struct {
	Invariant string // the promise, in a few words
	Detail    string
}

// Start starts the run's server, one or an ensemble (Workload.Ensemble),
// with its faults drawn from the seed: request faults at the
// configuration's rate, followers lagging, and the chaos events; opts are
// the workload's own options for the server. A workload's Run calls it
// once, first.
func (r *Run) Start(opts ...sim.Option) *sim.Server {
	opts = append(opts, sim.WithRandomFaults(r.Config.Seed, r.Config.Rate))
	if r.Config.Limit > 0 {
		opts = append(opts, sim.WithFaultLimit(r.Config.Limit))
	}
	if r.Config.Plan != nil {
		opts = append(opts, sim.WithFaultPlan(r.Config.Plan))
	}
	if len(r.Config.Skip) > 0 {
		opts = append(opts, sim.WithoutFaults(r.Config.Skip...))
	}
	opts = append(opts, sim.WithSteps())    // one thing at a time: a replay repeats the run
	if os.Getenv("ZKGEN_SIM_STEPS") != "" { // every step of the server in the history
		opts = append(opts, sim.WithStepLog(func(n uint64, what string) { r.Event(-1, "step %d: %s", n, what) }))
	}
	r.srv = sim.NewEnsemble(max(r.w.Ensemble, 1), opts...)
	rng := rand.New(rand.NewPCG(r.Config.Seed, 0xd1a7))
	for i := 1; i < r.w.Ensemble; i++ { // followers behind the leader from the start
		d := time.Duration(rng.IntN(200)) * time.Millisecond
		r.srv.SetDelay(i, d)
		r.Event(-1, "server %d lags %v", i, d)
	}
	// Sessions and servers cut off, lagging followers (sim.StartChaos);
	// a crashed process's session is spared: it stays dead.
	faults := r.Config.Faults
	if len(faults) == 0 {
		faults = r.w.Faults
	}
	r.stopChaos = r.srv.StartChaos(sim.Chaos{Seed: r.Config.Seed, Events: r.Config.Chaos, Faults: faults,
		Spare: r.isCrashed, Log: func(what string) { r.Event(-1, "%s", what) }, Plan: r.Config.ChaosPlan,
		Record: func(ev sim.ChaosEvent) {
			r.mu.Lock()
			r.chaos = append(r.chaos, ev)
			r.mu.Unlock()
		}})
	return r.srv
}

// Server is the run's server (nil before Start).
func (r *Run) Server() *sim.Server { return r.srv }

// Calm stops the request faults and the chaos (a workload's quiet end):
// cut-off sessions and servers are let through again.
func (r *Run) Calm() {
	r.srv.SetFaultRate(0)
	r.stopChaos()
}

// Rand is process who's own random draws for the run: the same for a seed
// whatever the other processes do. A workload draws its choices from it,
// never from math/rand's global source, or the seed does not replay.
func (r *Run) Rand(who int) *rand.Rand {
	return rand.New(rand.NewPCG(r.Config.Seed, uint64(who)+1))
}

// SessionSeed is the seed of process who's sessions' random choices
// (runtime.WithRandomSeed), for a workload that connects by itself.
func (r *Run) SessionSeed(who int) uint64 { return r.Config.Seed<<20 ^ uint64(who+1) }

// Since is the virtual time from the run's start to t, as the history
// shows times.
func (r *Run) Since(t time.Time) string {
	return fmt.Sprintf("%9.3fs", t.Sub(r.start).Seconds())
}

// Event adds a line to the history: process who did or saw something
// (-1: the harness). Lines recorded between two steps of the server are
// kept in process order, whatever order the goroutines ran in.
func (r *Run) Event(who int, format string, args ...any) {
	e := entry{at: time.Since(r.start), who: max(who, -1), text: fmt.Sprintf(format, args...)}
	if r.srv != nil {
		e.step = r.srv.Steps()
	}
	r.mu.Lock()
	e.seq = len(r.history)
	r.history = append(r.history, e)
	r.mu.Unlock()
}

// Violate records a broken invariant; the run goes on.
func (r *Run) Violate(invariant, format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, Violation{invariant, fmt.Sprintf(format, args...)})
	r.mu.Unlock()
}

// Stall records that the processes did not get their work done within
// the run's bound of virtual time (the progress invariant), and ends the
// run; call it from the workload's Run goroutine. ZKGEN_SIM_STACKS set
// adds every goroutine's stack.
func (r *Run) Stall(format string, args ...any) {
	if os.Getenv("ZKGEN_SIM_STACKS") != "" { // where everyone waits
		buf := make([]byte, 1<<22)
		format += "\n%s"
		args = append(args, buf[:goruntime.Stack(buf, true)])
	}
	r.Violate("progress", format, args...)
	panic(errStopRun{})
}

// Fatalf ends the run on a failure of the harness itself; call it from
// the workload's Run goroutine.
func (r *Run) Fatalf(format string, args ...any) {
	r.Violate("harness", format, args...)
	panic(errStopRun{})
}

// Logf keeps a line for the report (not part of the history).
func (r *Run) Logf(format string, args ...any) {
	r.mu.Lock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// Failed reports whether an invariant was broken.
func (r *Run) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.violations) > 0
}

// Violations are the broken invariants, in the order recorded.
func (r *Run) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.violations)
}

// Lost is how many sessions expired under the processes (Session.Get).
func (r *Run) Lost() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// Took is the virtual time the run took.
func (r *Run) Took() time.Duration { return r.took }

// ChaosEvents returns the chaos events the run did so far, drawn or
// forced (Config.ChaosPlan), for a schedule file.
func (r *Run) ChaosEvents() []sim.ChaosEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.chaos)
}

// Faults are the request faults that fired in the run.
func (r *Run) Faults() []sim.Fault {
	if r.srv == nil {
		return nil
	}
	return r.srv.FaultLog()
}

// entries merges the processes' history with the faults, in the
// history's order (entry).
func (r *Run) entries() []entry {
	r.mu.Lock()
	es := slices.Clone(r.history)
	r.mu.Unlock()
	for i, f := range r.Faults() {
		es = append(es, entry{at: f.At.Sub(r.start), step: f.Step, who: -2, seq: i, text: f.String()})
	}
	slices.SortFunc(es, byHistory)
	return es
}

// History is the run's history, line by line: the events, the chaos and
// the request faults, in virtual time ("    1.250s p2 took job-3").
func (r *Run) History() []string { return lines(r.entries()) }

// isCrashed reports whether session id is a crashed process's (Crash).
func (r *Run) isCrashed(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.crashed[id]
}

// Session returns process who's session keeper on the run's server;
// Finish closes it. Its sessions draw their random choices (GUIDs,
// back-off jitter, server order) from the seed and who (SessionSeed): a
// replay makes the same ones.
func (r *Run) Session(who int) *Session {
	// One option value for all its sessions: each draws a stream of its
	// own from it, so a process's successive sessions never share a GUID
	// (runtime.WithRandomSeed).
	w := &Session{run: r, who: who, seed: runtime.WithRandomSeed(r.SessionSeed(who))}
	r.mu.Lock()
	r.sessions = append(r.sessions, w)
	// In process order, not the order the processes asked in: the harness
	// closes them in this order.
	slices.SortStableFunc(r.sessions, func(a, b *Session) int { return cmp.Compare(a.who, b.who) })
	r.mu.Unlock()
	return w
}

// CloseSessions closes every process's sessions (Session.Close), in
// process order: the processes ended.
func (r *Run) CloseSessions() {
	r.mu.Lock()
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	for _, w := range sessions {
		w.Close()
	}
}
