package example_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/simsearch"
)

// The demo's job system (cmd/demo) searched for bugs on the simulator
// (docs/testing.md, "Searching your own service for bugs"): workers
// consume the tasks queue and run each job under the order lock of its
// shard, marking it done with a write fenced by that lock, on an ensemble
// of three simulated servers under the search's faults — lost replies,
// expired sessions, cut connections, lagging followers, leader elections,
// and workers frozen dead and restarted. The job system's own invariants,
// checked as it runs and at the end:
//
//   - one worker at a time per shard: a job's work starts only when no
//     other job of its shard is being worked on (the lock's promise as the
//     service relies on it, checked at every start);
//   - every job takes effect once: one done marker per job, written by
//     one worker, once every job is done.
//
// A plain go test tries seeds 1 to 3; ZKGEN_SIM_DURATION=10m searches new
// seeds for ten minutes; ZKGEN_EXAMPLE_PLANT=1 runs a job system with a
// bug planted (a worker that goes on working after its lock is lost), to
// see the search find it and print its report.
func TestJobSystemSearch(t *testing.T) {
	ws := []simsearch.Workload{jobSystem(false)}
	switch {
	case os.Getenv("ZKGEN_SIM_REPLAY") != "" || os.Getenv("ZKGEN_SIM_REPLAY_FILE") != "":
		ws = append(ws, jobSystem(true)) // a replay names its workload
	case os.Getenv("ZKGEN_EXAMPLE_PLANT") != "":
		ws = []simsearch.Workload{jobSystem(true)}
	}
	simsearch.Search(t, ws, simsearch.Options{Seeds: 3})
}

// The example's invariants can fail: the planted bug's shrunk seed (as
// docs/testing.md shows its report) breaks "one worker at a time per
// shard", and a second run, on two processors, repeats the first one's
// history.
func TestJobSystemInvariantCatchesThePlantedBug(t *testing.T) {
	cfg, err := simsearch.ParseConfig("seed=1,procs=3,ops=2,rate=0.02,chaos=3,limit=1")
	if err != nil {
		t.Fatal(err)
	}
	first := simsearch.RunOnce(t, jobSystem(true), cfg)
	if !first.Failed() {
		t.Fatalf("the planted bug went unseen:\n%s", strings.Join(first.History(), "\n"))
	}
	if simsearch.ReplaysExactly() {
		// Whatever processors the test has: every run is on one.
		prev := goruntime.GOMAXPROCS(2)
		again := simsearch.RunOnce(t, jobSystem(true), cfg)
		goruntime.GOMAXPROCS(prev)
		if a, b := simsearch.Hash(first.History()), simsearch.Hash(again.History()); a != b {
			t.Errorf("two runs of one seed, two histories: %s", simsearch.Divergence(first.History(), again.History()))
		}
	}
	if clean := simsearch.RunOnce(t, jobSystem(false), cfg); clean.Failed() {
		t.Errorf("the job system without the bug fails %s: %v", cfg, clean.Violations())
	}
}

// jobsRoot is where the job system writes its done markers.
const jobsRoot = "/zkgen-example/demo/done"

// jobSystem is the workload: Procs workers, Ops jobs each, spread over
// jobShards shards. planted: the workers ignore the loss of their lock.
func jobSystem(planted bool) simsearch.Workload {
	name := "jobs"
	if planted {
		name = "jobs-planted"
	}
	return simsearch.Workload{Name: name, Procs: 3, Ops: 4, Rate: 0.02, Ensemble: 3,
		Run: func(r *simsearch.Run) {
			r.Start()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
			defer cancel()
			js := &jobs{r: r, planted: planted, total: r.Config.Procs * r.Config.Ops,
				running: map[int]int{}, ran: map[string]int{}, done: map[string]bool{}, all: make(chan struct{})}
			js.put(ctx)
			var wg sync.WaitGroup
			for i := range r.Config.Procs {
				wg.Go(func() { js.worker(ctx, i) })
			}
			select {
			case <-js.all:
			case <-ctx.Done():
				r.Calm()
				for _, n := range r.Walk("/zkgen-example/queues/tasks") { // what is stuck
					r.Logf("%s (session %x, %d children)", n.Path, n.Owner, n.Kids)
				}
				r.Stall("%d of %d jobs done", js.doneCount(), js.total)
			}
			cancel()
			wg.Wait()
			js.check()
		}}
}

// jobShards is the number of order shards the jobs spread over.
const jobShards = 2

// jobs is one run of the job system, and what its workers did.
type jobs struct {
	r       *simsearch.Run
	planted bool
	total   int

	mu      sync.Mutex
	running map[int]int     // jobs being worked on, by shard
	ran     map[string]int  // done markers each job's workers wrote
	done    map[string]bool // jobs found done (a marker written now or before)
	all     chan struct{}   // closed when every job is done
}

// put puts every job on the tasks queue, on a session of its own (the
// scheduler's), a put again after an uncertain one: a job put twice takes
// effect once.
func (js *jobs) put(ctx context.Context) {
	w := js.r.Session(js.r.Config.Procs)
	defer w.Close()
	made := false
	for k := 0; k < js.total && ctx.Err() == nil; {
		s, err := w.Get(ctx)
		if err != nil {
			continue
		}
		if !made { // the markers' parent, as the demo's scheduler makes it
			_, err := s.CreatePersistent(ctx, jobsRoot)
			js.r.Event(-1, "create %s: %v", jobsRoot, err)
			made = err == nil || errors.Is(err, runtime.ErrNodeExists)
			continue
		}
		job := coord.Job{Name: fmt.Sprintf("job-%02d", k), Attempt: k}
		if err := coord.New(s).Tasks().Put(ctx, coord.TasksNormal, job); err != nil {
			js.r.Event(-1, "put %s: %v", job.Name, err)
			continue
		}
		k++
	}
}

// worker is worker i: it consumes the tasks on its session, a new one
// when that one ends, until every job is done; now and then it freezes
// dead after a job (Run.Crash) and starts again.
func (js *jobs) worker(ctx context.Context, i int) {
	w := js.r.Session(i)
	rng := js.r.Rand(i)
	for ctx.Err() == nil {
		s, err := w.Get(ctx)
		if err != nil {
			continue
		}
		c := coord.New(s)
		cctx, stop := context.WithCancel(ctx)
		crash := false
		err = c.Tasks().Consume(cctx, func(jctx context.Context, job coord.Job) error {
			err := js.process(jctx, i, c, job, time.Duration(rng.IntN(6000))*time.Millisecond)
			if err == nil && rng.IntN(8) == 0 {
				crash = true
				stop()
			}
			return err
		})
		stop()
		js.r.Event(i, "consume ended: %v", err)
		if crash {
			js.r.Crash(i, w)
		}
	}
}

// process runs job under its shard's order lock for work, then marks it
// done with a write fenced by the lock. The work stops when the lock is
// lost (ctx ends), but in the planted bug's job system.
func (js *jobs) process(ctx context.Context, i int, c *coord.Client, job coord.Job, work time.Duration) error {
	shard := job.Attempt % jobShards
	l := c.OrderLock(shard)
	return l.Do(ctx, func(ctx context.Context) error {
		js.enter(i, shard, job)
		defer js.leave(shard)
		if js.planted {
			time.Sleep(work) // the bug: deaf to the lock's loss
		} else {
			select {
			case <-time.After(work):
			case <-ctx.Done():
				js.r.Event(i, "lost the shard %d lock on %s: %v", shard, job.Name, context.Cause(ctx))
				return context.Cause(ctx)
			}
		}
		_, err := l.Guarded(ctx, runtime.CreateOp(jobsRoot+"/"+job.Name, nil))
		js.r.Event(i, "marks %s done (token %d): %v", job.Name, l.Token(), err)
		switch {
		case errors.Is(err, runtime.ErrNodeExists): // done by an earlier delivery
		case err != nil:
			return err // delivered again
		default:
			js.mu.Lock()
			js.ran[job.Name]++
			js.mu.Unlock()
		}
		js.finish(job.Name)
		return nil
	})
}

// enter is the invariant checked at every job's start: no other job of
// the shard is being worked on.
func (js *jobs) enter(i, shard int, job coord.Job) {
	js.r.Event(i, "works on %s (shard %d)", job.Name, shard)
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.running[shard] > 0 {
		js.r.Violate("one worker at a time per shard", "p%d starts %s while another job of shard %d is being worked on", i, job.Name, shard)
	}
	js.running[shard]++
}

func (js *jobs) leave(shard int) {
	js.mu.Lock()
	js.running[shard]--
	js.mu.Unlock()
}

// finish counts job done (its marker written now or before); the last
// one closes all.
func (js *jobs) finish(job string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if !js.done[job] {
		js.done[job] = true
		if len(js.done) == js.total {
			close(js.all)
		}
	}
}

func (js *jobs) doneCount() int {
	js.mu.Lock()
	defer js.mu.Unlock()
	return len(js.done)
}

// check is the invariant checked at the end, the faults off: every job
// has one done marker, and no job's workers wrote two.
func (js *jobs) check() {
	js.r.Quiet("/zkgen-example", 30*time.Second)
	markers := 0
	for _, n := range js.r.Walk(jobsRoot) {
		if n.Path != jobsRoot {
			markers++
		}
	}
	if markers != js.total {
		js.r.Violate("every job takes effect once", "%d done markers for %d jobs", markers, js.total)
	}
	for _, job := range slices.Sorted(maps.Keys(js.ran)) {
		if n := js.ran[job]; n > 1 {
			js.r.Violate("every job takes effect once", "%s marked done %d times", job, n)
		}
	}
	js.r.CloseSessions()
}
