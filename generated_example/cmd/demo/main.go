// Command demo runs a small distributed job system on the example topology,
// the way a long-running service would: three workers (each with its own
// ZooKeeper sessions, as separate processes would have) run under the
// generated coord.Run, which opens a new session whenever one ends. Each
// worker stays in the workers group, campaigns for scheduler, and consumes
// the tasks queue (at-least-once); whoever is elected puts the jobs; every
// job runs under the order lock of its shard and records that it is done
// with a write fenced by that lock, so a job delivered twice (a session that
// ended before its ack, a scheduler that failed over and put the jobs again)
// takes effect once. Live output shows who does what, with a progress line.
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
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// workers is the number of workers.
const workers = 3

// shards is the number of order shards the jobs spread over.
const shards = 4

type config struct {
	servers  [][]string // each worker's server list
	jobs     int
	work     time.Duration // simulated work per job
	timeout  time.Duration // session timeout
	progress bool          // redraw a progress line (on a terminal)

	// Hooks for the test; nil in the command.
	onSession func(worker int, ev runtime.SessionEvent)
	onElected func(worker int)
	onDone    func(done int)
}

func main() {
	embedded := flag.Bool("embedded", false, "start a ZooKeeper from the Debian zookeeper package for the demo")
	jobs := flag.Int("jobs", 24, "jobs to run")
	work := flag.Duration("work", 50*time.Millisecond, "simulated work per job")
	flag.Parse()

	cfg := config{jobs: *jobs, work: *work, timeout: 10 * time.Second, progress: isTerminal(os.Stdout)}
	var servers []string
	if *embedded {
		srv, err := zktest.StartProcess()
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo: starting ZooKeeper:", err)
			os.Exit(1)
		}
		defer srv.Close()
		fmt.Printf("started ZooKeeper at %s (pid %d)\n", srv.Addr(), srv.PID())
		servers = srv.Servers()
	} else {
		s := os.Getenv("ZK_SERVERS")
		if s == "" {
			s = "127.0.0.1:2181"
		}
		servers = strings.Split(s, ",")
	}
	for range workers {
		cfg.servers = append(cfg.servers, servers)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demo is the shared state of one run.
type demo struct {
	cfg     config
	out     io.Writer
	doneDir string // done markers of this run's jobs

	mu       sync.Mutex // serialises output; guards finished and markers
	finished map[string]bool
	markers  int           // done markers counted once the last job was done
	all      chan struct{} // closed once every job is done
}

func (d *demo) say(who, format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sayLocked(who, format, args...)
}

func (d *demo) sayLocked(who, format string, args ...any) {
	if d.cfg.progress {
		fmt.Fprint(d.out, "\r\033[K")
	}
	fmt.Fprintf(d.out, "%-9s %s\n", who, fmt.Sprintf(format, args...))
	if d.cfg.progress {
		fmt.Fprintf(d.out, "progress: %d/%d jobs", len(d.finished), d.cfg.jobs)
	}
}

// finish records that job is done (its marker written now, or found written
// by an earlier delivery whose ack or reply was lost). Whoever finishes the
// last job counts the markers, on its own session: a marker too many or too
// few would show.
func (d *demo) finish(ctx context.Context, c *coord.Client, job string) error {
	d.mu.Lock()
	if d.finished[job] {
		d.mu.Unlock()
		return nil
	}
	d.finished[job] = true
	if d.cfg.onDone != nil {
		d.cfg.onDone(len(d.finished))
	}
	last := len(d.finished) == d.cfg.jobs
	d.mu.Unlock()
	if !last {
		return nil
	}
	kids, err := c.Session().Children(ctx, d.doneDir)
	if err != nil { // the job is delivered again, and counted then
		d.mu.Lock()
		delete(d.finished, job)
		d.mu.Unlock()
		return err
	}
	d.mu.Lock()
	d.markers = len(kids)
	d.mu.Unlock()
	close(d.all)
	return nil
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	d := &demo{cfg: cfg, out: out, finished: map[string]bool{}, all: make(chan struct{})}
	d.doneDir = fmt.Sprintf("/zkgen-example/demo/run-%d/done", time.Now().UnixNano())
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := fmt.Sprintf("worker-%d", i+1)
			events := runtime.WithSessionEvents(func(ev runtime.SessionEvent) {
				if ev.Generation > 1 {
					d.say(who, "new session 0x%x (#%d; the last one ended: %v)", ev.ID, ev.Generation, ev.PrevErr)
				}
				if cfg.onSession != nil {
					cfg.onSession(i, ev)
				}
			})
			err := coord.Run(wctx, cfg.servers[i], func(ctx context.Context, c *coord.Client) error {
				return d.worker(ctx, i, c)
			}, runtime.WithSessionTimeout(cfg.timeout), runtime.WithLogger(slog.New(slog.DiscardHandler)), events)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", who, err)
				cancel()
			}
		}()
	}
	select {
	case <-d.all:
	case <-wctx.Done():
	}
	cancel()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sayLocked("demo", "done: %d jobs, each done once (%d done markers)", len(d.finished), d.markers)
	return nil
}

// worker is one session's work of worker i: stay in the group, campaign for
// scheduler (and schedule while elected), and consume tasks, until the
// session or ctx ends.
func (d *demo) worker(ctx context.Context, i int, c *coord.Client) error {
	who := fmt.Sprintf("worker-%d", i+1)
	me := coord.Member{Host: who, Port: 7001 + i}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = c.Workers().Stay(ctx, me)
	}()
	go func() {
		defer wg.Done()
		_ = c.Scheduler().Run(ctx, me, func(ctx context.Context, l *runtime.Leadership[coord.Member]) error {
			d.say(who, "elected scheduler (epoch %d)", l.Epoch())
			if d.cfg.onElected != nil {
				d.cfg.onElected(i)
			}
			// The service's own znodes sit beside the recipes', on the
			// same session (c.Session()).
			if _, err := c.Session().CreatePersistent(ctx, d.doneDir); err != nil {
				return err
			}
			if err := d.schedule(ctx, who, c.Tasks()); err != nil {
				return err
			}
			<-ctx.Done() // lead until the leadership or the session ends
			return nil
		})
	}()
	return c.Tasks().Consume(ctx, func(ctx context.Context, job coord.Job) error {
		return d.process(ctx, who, c, job)
	})
}

// schedule puts every job, spread over the priorities. A new scheduler after
// a failover puts them all again: a job put twice takes effect once.
func (d *demo) schedule(ctx context.Context, who string, tasks coord.TasksHandle) error {
	prios := []runtime.Priority{coord.TasksUrgent, coord.TasksNormal, coord.TasksBulk}
	names := []string{"urgent", "normal", "bulk"}
	put := 0
	for i := range d.cfg.jobs {
		p := i % len(prios)
		job := coord.Job{Name: fmt.Sprintf("job-%02d-%s", i, names[p]), Attempt: i}
		if err := tasks.Put(ctx, prios[p], job); err != nil {
			return err
		}
		put++
	}
	d.say(who, "scheduled %d jobs", put)
	return nil
}

// process runs one job under the order lock of its shard and marks it done
// with a write fenced by the lock: the marker is written only while the
// lock is held, and only once.
func (d *demo) process(ctx context.Context, who string, c *coord.Client, job coord.Job) error {
	shard := job.Attempt % shards
	l := c.OrderLock(shard)
	l.SetPurpose(job.Name)
	return l.Do(ctx, func(ctx context.Context) error {
		select {
		case <-time.After(d.cfg.work):
		case <-ctx.Done(): // ctx ends if the lock is lost mid-job
			return context.Cause(ctx)
		}
		_, err := l.Guarded(ctx, runtime.CreateOp(d.doneDir+"/"+job.Name, nil))
		switch {
		case errors.Is(err, runtime.ErrNodeExists):
			d.say(who, "skipped %-16s: done already (delivered again)", job.Name)
		case err != nil:
			return err // released: delivered again, to find out
		default:
			d.say(who, "ran %-16s under the shard %d lock (fencing token %d)", job.Name, shard, l.Token())
		}
		return d.finish(ctx, c, job.Name)
	})
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
