package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	libs "github.com/zkgen/zkgen/internal/peers"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The peers in other languages, Apache Curator (Java) and kazoo (Python),
// run as sub-benchmarks impl=curator and impl=kazoo next to impl=zkgen. Each
// runs in a driver process (testdata/CuratorBench.java,
// testdata/kazoo_bench.py) that connects through the benchmark's counting
// proxy, sets up its sessions and warms up, says "ready", and on "go" runs
// the workload with its own threads and sessions and reports how long the
// measured part took by its own clock: process start, JVM warm-up and
// connecting stay outside the timing. kazoo's queue workloads run each
// producer and consumer in a worker process of its own, as they would be
// deployed: in one Python interpreter the eight sessions would share one
// core (the GIL), while zkgen's use both. The wire counts are the proxy's
// between go and done, as for zkgen.

const (
	// peerWarmup is how long a driver runs its workload before it says
	// ready, so that the JVM has compiled the hot paths (zkgen's are
	// compiled ahead).
	peerWarmup = time.Second
	// peerWait bounds every wait on a driver (ready, a round, its exit).
	peerWait = 3 * time.Minute
)

// javaOpts are the JVM's options for the Curator driver: a small heap and
// the serial collector, which keeps the collector's threads off the
// machine's few cores. ZKGEN_BENCH_JAVA_OPTS adds more (space-separated),
// such as -Djute.maxbuffer=4194304 for the client's largest reply.
var javaOpts = []string{"-Xms64m", "-Xmx256m", "-XX:+UseSerialGC"}

// peerImpl is a peer library whose driver runs as a subprocess.
type peerImpl struct {
	name string                   // the sub-benchmark's impl=<name>
	find func() ([]string, error) // the driver's command line, found once

	once sync.Once
	argv []string
	err  error
}

var peers = []*peerImpl{
	{name: "curator", find: findCurator},
	{name: "kazoo", find: findKazoo},
}

// command returns the driver's command line, or skips the benchmark when
// the peer is not installed.
func (p *peerImpl) command(b *testing.B) []string {
	b.Helper()
	p.once.Do(func() { p.argv, p.err = p.find() })
	if errors.Is(p.err, libs.ErrNotInstalled) {
		b.Skip(p.err)
	}
	if p.err != nil {
		b.Fatal(p.err)
	}
	return p.argv
}

// buildDir holds the compiled Java driver; removed by TestMain.
var buildDir string

func findCurator() ([]string, error) {
	src, err := filepath.Abs(filepath.Join("testdata", "CuratorBench.java"))
	if err != nil {
		return nil, err
	}
	dir, err := javaBuildDir()
	if err != nil {
		return nil, err
	}
	java, cp, err := libs.Curator(src, dir)
	if err != nil {
		return nil, err
	}
	return javaArgv(java, cp, "CuratorBench"), nil
}

// javaArgv is the command line that runs class with the drivers' JVM
// options.
func javaArgv(java, cp, class string) []string {
	argv := append([]string{java}, javaOpts...)
	argv = append(argv, strings.Fields(os.Getenv("ZKGEN_BENCH_JAVA_OPTS"))...)
	return append(argv, "-cp", cp, class)
}

// javaBuildDir returns buildDir, made on first use.
func javaBuildDir() (string, error) {
	if buildDir != "" {
		return buildDir, nil
	}
	dir, err := os.MkdirTemp("", "zkgen-bench-")
	if err != nil {
		return "", err
	}
	buildDir = dir
	return dir, nil
}

func findKazoo() ([]string, error) {
	py, _, err := libs.Kazoo()
	if err != nil {
		return nil, err
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo_bench.py"))
	if err != nil {
		return nil, err
	}
	return []string{py, "-u", script}, nil
}

// driver is one running peer driver process.
type driver struct {
	b     *testing.B
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string  // stdout's protocol lines; closed at its end
	log   *libs.Output // everything else it printed, for messages
	done  chan struct{}
	err   error // exit status, once done is closed
}

// startDriver starts impl's driver on workload with b.N operations, through
// the proxy p on path; extra are more key=value arguments. The process is
// killed (by PID) at the end of the benchmark if it is still running.
func startDriver(b *testing.B, impl *peerImpl, p *zktest.Proxy, path, workload string, extra ...string) *driver {
	b.Helper()
	argv := impl.command(b)
	args := append(argv[1:len(argv):len(argv)],
		"zk="+p.Addr(), "path="+path, "workload="+workload, "n="+strconv.Itoa(b.N),
		"warmup_ms="+strconv.FormatInt(peerWarmup.Milliseconds(), 10))
	args = append(args, extra...)
	d := &driver{
		b:     b,
		name:  impl.name + " " + workload,
		cmd:   exec.Command(argv[0], args...),
		lines: make(chan string, 16),
		log:   &libs.Output{Limit: 64 << 10},
		done:  make(chan struct{}),
	}
	d.cmd.Stderr = d.log
	d.cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	if err := zktest.StartCommand(d.cmd); err != nil {
		b.Fatalf("start %s: %v", d.name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			switch f, _, _ := strings.Cut(l, " "); f {
			case "ready", "done", "error":
				d.lines <- l
			default:
				fmt.Fprintln(d.log, l)
			}
		}
		close(d.lines)
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	b.Cleanup(d.kill)
	return d
}

// kill ends the process if it is still running and reaps it.
func (d *driver) kill() {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Kill()
	for range d.lines { // let the reader reach the end and reap it
	}
	<-d.done
}

// next returns the driver's next protocol line, which must start with want;
// an error line, an exit or peerWait without a line fail the benchmark.
func (d *driver) next(want string) string {
	d.b.Helper()
	select {
	case l, ok := <-d.lines:
		if !ok {
			<-d.done
			d.b.Fatalf("%s exited (%v) waiting for %q; output:\n%s", d.name, d.err, want, d.log.Tail(30))
		}
		if f, _, _ := strings.Cut(l, " "); f != want {
			d.b.Fatalf("%s: %s (waiting for %q); output:\n%s", d.name, l, want, d.log.Tail(30))
		}
		return l
	case <-time.After(peerWait):
		d.kill()
		d.b.Fatalf("%s: no %q within %v; killed; output:\n%s", d.name, want, peerWait, d.log.Tail(30))
	}
	return ""
}

// ready waits until the driver is set up for a round.
func (d *driver) ready() { d.next("ready") }

// send writes a line to the driver.
func (d *driver) send(line string) {
	d.b.Helper()
	if _, err := io.WriteString(d.stdin, line+"\n"); err != nil {
		d.b.Fatalf("%s: write %q: %v; output:\n%s", d.name, line, err, d.log.Tail(30))
	}
}

// round runs one measured round and returns the driver's timing of it and
// the operations it did.
func (d *driver) round() (time.Duration, int) {
	d.b.Helper()
	d.send("go")
	var ns, n int64 = -1, -1
	for _, kv := range strings.Fields(d.next("done"))[1:] {
		k, v, _ := strings.Cut(kv, "=")
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			d.b.Fatalf("%s: bad result %q", d.name, kv)
		}
		switch k {
		case "ns":
			ns = x
		case "n":
			n = x
		}
	}
	if ns < 0 || n < 0 {
		d.b.Fatalf("%s: result without ns= and n=", d.name)
	}
	return time.Duration(ns), int(n)
}

// finish tells the driver to quit and waits for it to exit cleanly.
func (d *driver) finish() {
	d.b.Helper()
	d.send("quit")
	d.stdin.Close()
	select {
	case <-d.done:
	case <-time.After(peerWait):
		d.kill()
		d.b.Fatalf("%s did not exit within %v; killed", d.name, peerWait)
	}
	for l := range d.lines {
		if strings.HasPrefix(l, "error") {
			d.b.Fatalf("%s: %s; output:\n%s", d.name, l, d.log.Tail(30))
		}
	}
	if d.err != nil {
		d.b.Fatalf("%s exited: %v; output:\n%s", d.name, d.err, d.log.Tail(30))
	}
}

// peerRun runs b.N operations of workload in one round of impl's driver and
// reports them as zkgen's benchmarks do: ns/op by the driver's clock, the
// throughput in unit (ops/s, items/sec) and the wire counts per operation.
func peerRun(b *testing.B, impl *peerImpl, workload, unit string, extra ...string) {
	p, path := setup(b)
	d := startDriver(b, impl, p, path, workload, extra...)
	d.ready()
	p.ResetCounts()
	b.ResetTimer()
	elapsed, n := d.round()
	b.StopTimer()
	report(b, p, b.N)
	if n != b.N {
		b.Fatalf("%s did %d operations, want %d", d.name, n, b.N)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit)
	d.finish()
}

// peerFailover runs b.N rounds of the election workload, one failover each,
// and reports the mean (ns/op), p50 and p90 failover and the wire counts of
// the failovers themselves.
func peerFailover(b *testing.B, impl *peerImpl, candidates int) {
	p, path := setup(b)
	d := startDriver(b, impl, p, path, "election", "clients="+strconv.Itoa(candidates))
	m := &meter{p: p}
	lat := make([]time.Duration, 0, b.N)
	var sum time.Duration
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		d.ready()
		b.StartTimer()
		m.start()
		el, _ := d.round()
		m.stop()
		b.StopTimer()
		lat = append(lat, el)
		sum += el
	}
	m.report(b, b.N)
	b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N), "ns/op")
	ms(b, percentile(lat, 0.5), "p50-ms")
	ms(b, percentile(lat, 0.9), "p90-ms")
	d.finish()
}
