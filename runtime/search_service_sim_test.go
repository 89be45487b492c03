package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/simsearch"
)

// The service workloads (issue 43): each process registers one instance
// of the service "svc" (id p<i>, its payload "<incarnation>.<version>"),
// holds it with Services.Run on each session it gets, and updates the
// payload now and then, under random faults on virtual time; one round in
// ten it crashes and starts again as a new incarnation with the same id.
// A reader follows the service with Changes. Under reap-service an
// operator also deletes registrations by hand. Checked, from Services'
// contract (docs/service.md):
//
//   - the reader never sees an id's registration go back: its
//     (incarnation, version) only grows (a process's registration carries
//     its current data through sessions; an old incarnation's node goes
//     with its session before the new one registers);
//   - once quiet, a fresh reader lists exactly the processes alive, each
//     with its current payload (a live registered process is listed, a
//     dead one is not once its session ended).
var serviceWorkloads = []workload{
	{name: "service", procs: 3, ops: 8, minProcs: 1, rate: 0.03, run: serviceSearch},
	{name: "reap-service", procs: 3, ops: 8, minProcs: 1, rate: 0.03, reap: true, run: serviceSearch},
	{name: "ensemble-service", procs: 3, ops: 8, minProcs: 1, rate: 0.03, ensemble: 3, run: serviceSearch},
}

// svcProc is one process of the service workload, as the harness knows it.
type svcProc struct {
	alive   bool
	current string // the payload it last registered or asked to update to
}

func serviceSearch(r *searchRun) {
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	stopOperator := r.reaper("/svc")
	procs, rounds := r.Config.Procs, r.Config.Ops
	var mu sync.Mutex
	state := make([]svcProc, procs)
	stopReader := serviceReader(r, ctx, procs)
	var wg sync.WaitGroup
	finals := make([]func(), procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			finals[i] = serviceProcess(r, ctx, i, rounds, func(p svcProc) {
				mu.Lock()
				state[i] = p
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	stopOperator()
	if ctx.Err() != nil {
		r.Stall("the processes did not finish their rounds\n%s", simDump(r.Server(), "/svc"))
	}
	r.Calm()
	time.Sleep(30 * time.Second) // dead sessions expired, registrations rewritten
	got := serviceListing(r, ctx, procs+1)
	var want []string
	mu.Lock()
	for i, p := range state {
		if p.alive {
			want = append(want, fmt.Sprintf("p%d=%s", i, p.current))
		}
	}
	mu.Unlock()
	if !slices.Equal(got, want) {
		r.Violate("once quiet, the live processes are listed with their current data", "listed %v; alive %v", got, want)
	}
	stopReader()
	for _, f := range finals { // the live ones unregister and stop
		f()
	}
	r.Finish("/svc", 30*time.Second, "/svc", "/svc/svc")
	r.Logf("%d processes, %d alive at the end", procs, len(want))
}

// serviceProcess runs process who's rounds, reporting its state to report
// after each change; it returns what ends the process at the end (if it
// is alive then): Unregister and stop.
func serviceProcess(r *searchRun, ctx context.Context, who, rounds int, report func(svcProc)) (final func()) {
	w := r.Session(who)
	rng := r.Rand(who)
	id := fmt.Sprintf("p%d", who)
	for inc, k := 1, 0; k < rounds && ctx.Err() == nil; inc++ {
		d := runtime.NewServices[string](runtime.At("/svc"))
		pctx, stop := context.WithCancel(ctx)
		runs := serviceRunner(pctx, w, d)
		inst := runtime.ServiceInstance[string]{Name: "svc", ID: id, Address: "10.0.0.1", Port: 8080 + who}
		inst.Payload = fmt.Sprintf("%d.0", inc)
		report(svcProc{alive: true, current: inst.Payload})
		_, err := d.Register(ctx, inst)
		r.Event(who, "register %s (incarnation %d): %v", id, inc, err)
		for ver := 1; k < rounds && ctx.Err() == nil; ver, k = ver+1, k+1 {
			time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
			if rng.IntN(10) == 0 && k < rounds-1 { // the last round ends alive
				r.Crash(who, w) // the process dies: its node goes with its session
				stop()
				<-runs
				report(svcProc{})
				break
			}
			inst.Payload = fmt.Sprintf("%d.%d", inc, ver)
			report(svcProc{alive: true, current: inst.Payload})
			uctx, ucancel := context.WithTimeout(ctx, 5*time.Second)
			r.Event(who, "update to %s: %v", inst.Payload, d.Update(uctx, inst))
			ucancel()
		}
		if k >= rounds {
			return func() {
				r.Event(who, "unregister: %v", d.Unregister(ctx, "svc", id))
				stop()
				<-runs
			}
		}
		stop() // crashed (stopped already), or ctx ended
		<-runs
	}
	return func() {}
}

// serviceRunner holds d's registrations with Run on each session w gets,
// until ctx ends; the channel closes then.
func serviceRunner(ctx context.Context, w *simsearch.Session, d *runtime.Services[string]) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			s, err := w.Get(ctx)
			if err != nil {
				continue
			}
			_ = d.Run(ctx, s)
		}
	}()
	return done
}

// serviceReader follows the service with Changes as process who, on
// sessions of its own, and checks that no id's (incarnation, version)
// goes back; stop ends it.
func serviceReader(r *searchRun, ctx context.Context, who int) (stop func()) {
	d := runtime.NewServices[string](runtime.At("/svc"))
	rctx, cancel := context.WithCancel(ctx)
	runs := serviceRunner(rctx, r.Session(who), d)
	seen := map[string][2]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range d.Changes(rctx, "svc") {
			if ev.Kind != runtime.CacheAdded && ev.Kind != runtime.CacheChanged {
				continue
			}
			at, ok := parseIncVer(ev.Instance.Payload)
			if !ok {
				r.Violate("a registration holds what its process wrote", "%s holds %q", ev.Instance.ID, ev.Instance.Payload)
				continue
			}
			if last, had := seen[ev.Instance.ID]; had && (at[0] < last[0] || at[0] == last[0] && at[1] < last[1]) {
				r.Violate("a registration never goes back", "%s showed %d.%d after %d.%d", ev.Instance.ID, at[0], at[1], last[0], last[1])
			}
			seen[ev.Instance.ID] = at
		}
	}()
	return func() {
		cancel()
		<-runs
		<-done
	}
}

// serviceListing lists the service's instances as "id=payload", in id
// order, from a fresh Services on a session of process who's.
func serviceListing(r *searchRun, ctx context.Context, who int) []string {
	d := runtime.NewServices[string](runtime.At("/svc"))
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := serviceRunner(lctx, r.Session(who), d)
	defer func() { cancel(); <-runs }()
	insts, err := d.Instances(ctx, "svc")
	if err != nil {
		r.Fatalf("Instances without faults: %v", err)
	}
	var out []string
	for _, in := range insts {
		out = append(out, in.ID+"="+in.Payload)
	}
	return out
}

// parseIncVer reads a payload "<incarnation>.<version>".
func parseIncVer(p string) ([2]int, bool) {
	a, b, ok := strings.Cut(p, ".")
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return [2]int{x, y}, ok && err1 == nil && err2 == nil
}
