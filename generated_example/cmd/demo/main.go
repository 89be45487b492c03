// Command demo runs a small distributed job system on the example topology:
// three workers (each with its own ZooKeeper session, as separate processes
// would have) elect a scheduler; the scheduler puts prioritized jobs on the
// tasks queue; every worker takes jobs and runs each under the order lock of
// its shard; at the end of each epoch everybody meets at the epoch's double
// barrier. Live output shows who does what, with a progress line.
//
//	go run ./generated_example/cmd/demo --embedded         # starts its own ZooKeeper
//	ZK_SERVERS=127.0.0.1:2181 go run ./generated_example/cmd/demo
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// workers is the double barrier's size in the spec (epoch: size 3).
const workers = 3

// shards is the number of order shards the jobs spread over.
const shards = 4

// endOfEpoch names the marker job the scheduler puts once per worker after
// an epoch's jobs: a worker that takes one goes to the barrier.
const endOfEpoch = "end-of-epoch"

type config struct {
	servers  []string
	epochs   int
	jobs     int           // jobs per epoch
	work     time.Duration // simulated work per job
	progress bool          // redraw a progress line (on a terminal)
}

func main() {
	embedded := flag.Bool("embedded", false, "start a ZooKeeper from the Debian zookeeper package for the demo")
	epochs := flag.Int("epochs", 2, "epochs to run")
	jobs := flag.Int("jobs", 12, "jobs per epoch")
	work := flag.Duration("work", 20*time.Millisecond, "simulated work per job")
	flag.Parse()

	cfg := config{epochs: *epochs, jobs: *jobs, work: *work, progress: isTerminal(os.Stdout)}
	if *embedded {
		srv, err := zktest.StartProcess()
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo: starting ZooKeeper:", err)
			os.Exit(1)
		}
		defer srv.Close()
		fmt.Printf("started ZooKeeper at %s (pid %d)\n", srv.Addr(), srv.PID())
		cfg.servers = srv.Servers()
	} else {
		s := os.Getenv("ZK_SERVERS")
		if s == "" {
			s = "127.0.0.1:2181"
		}
		cfg.servers = strings.Split(s, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demo is the shared state of one run: output and counters.
type demo struct {
	cfg  config
	out  io.Writer
	mu   sync.Mutex // serialises output
	done atomic.Int64
}

func (d *demo) say(who, format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.progress {
		fmt.Fprint(d.out, "\r\033[K")
	}
	fmt.Fprintf(d.out, "%-9s %s\n", who, fmt.Sprintf(format, args...))
	if d.cfg.progress {
		fmt.Fprintf(d.out, "progress: %d/%d jobs", d.done.Load(), int64(d.cfg.epochs*d.cfg.jobs))
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	d := &demo{cfg: cfg, out: out}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	clients := make([]*coord.Client, workers)
	for i := range clients {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		sess, err := runtime.Connect(cctx, cfg.servers, runtime.WithSessionTimeout(10*time.Second))
		ccancel()
		if err != nil {
			return err
		}
		defer sess.Close()
		clients[i] = coord.New(sess)
	}

	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.worker(ctx, i+1, c); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("worker %d: %w", i+1, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	d.say("demo", "done: %d jobs in %d epochs", d.done.Load(), cfg.epochs)
	return nil
}

// worker campaigns for scheduler while it works: whoever is elected puts
// each epoch's jobs; everybody takes jobs until its end-of-epoch marker, then
// meets the others at the epoch's double barrier.
func (d *demo) worker(ctx context.Context, id int, c *coord.Client) error {
	who := fmt.Sprintf("worker-%d", id)
	me := coord.Member{Host: who, Port: 7000 + id}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Campaign in the background: the leader schedules every epoch.
	var leader atomic.Pointer[runtime.Leadership[coord.Member]]
	elected := make(chan struct{})
	go func() {
		l, err := c.Scheduler().Campaign(ctx, me)
		if err != nil {
			return
		}
		leader.Store(l)
		d.say(who, "elected scheduler (epoch %d)", l.Epoch())
		close(elected)
	}()
	defer func() {
		if l := leader.Load(); l != nil {
			l.Resign(context.WithoutCancel(ctx))
		}
	}()

	// Wait until someone leads; if it is this worker, wait for its own
	// leadership too.
	scheduler := false
	for st := range c.Scheduler().Observe(ctx) {
		if st.Elected {
			scheduler = st.Payload == me
			break
		}
	}
	if scheduler {
		select {
		case <-elected:
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	tasks := c.Tasks()
	for epoch := 1; epoch <= d.cfg.epochs; epoch++ {
		if scheduler {
			if err := d.schedule(ctx, who, tasks, epoch); err != nil {
				return err
			}
		}
		for {
			job, err := tasks.Take(ctx)
			if err != nil {
				return err
			}
			if job.Name == endOfEpoch {
				break
			}
			if err := d.process(ctx, who, c, job); err != nil {
				return err
			}
		}
		b := c.Epoch(epoch)
		d.say(who, "at the end of epoch %d: entering its barrier", epoch)
		if err := b.Enter(ctx); err != nil {
			return err
		}
		if err := b.Leave(ctx); err != nil {
			return err
		}
		d.say(who, "left the epoch %d barrier", epoch)
	}
	return nil
}

// schedule puts one epoch's jobs, spread over the priorities, then one
// end-of-epoch marker per worker at the lowest priority.
func (d *demo) schedule(ctx context.Context, who string, tasks coord.TasksHandle, epoch int) error {
	prios := []runtime.Priority{coord.TasksUrgent, coord.TasksNormal, coord.TasksBulk}
	names := []string{"urgent", "normal", "bulk"}
	for i := 0; i < d.cfg.jobs; i++ {
		p := i % len(prios)
		job := coord.Job{Name: fmt.Sprintf("e%d-%s-%d", epoch, names[p], i), Attempt: i}
		if err := tasks.Put(ctx, prios[p], job); err != nil {
			return err
		}
	}
	for i := 0; i < workers; i++ {
		if err := tasks.Put(ctx, coord.TasksBulk, coord.Job{Name: endOfEpoch}); err != nil {
			return err
		}
	}
	d.say(who, "scheduled %d jobs for epoch %d", d.cfg.jobs, epoch)
	return nil
}

// process runs one job under the order lock of its shard.
func (d *demo) process(ctx context.Context, who string, c *coord.Client, job coord.Job) error {
	shard := job.Attempt % shards
	l := c.OrderLock(shard)
	l.SetPurpose(job.Name)
	if err := l.Lock(ctx); err != nil {
		return err
	}
	work := l.Context() // cancelled if the lock is lost mid-job
	select {
	case <-time.After(d.cfg.work):
	case <-work.Done():
		return context.Cause(work)
	case <-ctx.Done():
		l.Unlock(context.WithoutCancel(ctx))
		return ctx.Err()
	}
	d.done.Add(1)
	d.say(who, "ran %-16s under the shard %d lock (fencing token %d)", job.Name, shard, l.Token())
	return l.Unlock(ctx)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
