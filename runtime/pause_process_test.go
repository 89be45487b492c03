//go:build linux

package runtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

// "Every tenure knows it is stale the moment it asks": a process holding a
// tenure is frozen (SIGSTOP) past its session timeout, or past its lease's
// TTL; the server expires it; another process takes the tenure over and
// writes under it; the frozen process is resumed (SIGCONT). The first
// check the resumed process makes must say lost, and a guarded write it
// makes must be refused with the tenure's loss error and leave the data
// as the new holder wrote it.
//
// The holder is a real process: the test binary run again as
// TestPauseChild (pauseEnvKind set). It takes its tenure, prints
// "held <node> <token>", then asks about the tenure every millisecond (the
// cadence of its work, not a synchronisation). An iteration that starts
// more than pauseGap after the previous one is the first after the resume:
// its answers are reported, a guarded write is made, and the child prints
// "resumed <json>" and exits. A command sent by the parent after SIGCONT
// would arrive after the runtime's goroutines had run; the gap needs none.

// The child's environment.
const (
	pauseEnvKind     = "ZKGEN_PAUSE_CHILD" // the tenure to take; unset: not a child
	pauseEnvServers  = "ZKGEN_PAUSE_SERVERS"
	pauseEnvRoot     = "ZKGEN_PAUSE_ROOT"
	pauseEnvTimeout  = "ZKGEN_PAUSE_SESSION_TIMEOUT"
	pauseEnvCtxFirst = "ZKGEN_PAUSE_CTX_FIRST" // "1": ask Context().Err() before Held()
	// pauseEnvNegative, set to 1 by whoever runs the tests, is the control
	// that shows these tests can fail: the children then answer with a
	// context derived from the tenure's (context.WithCancel), which learns
	// of the end only once a goroutine of the runtime has acted on it, not
	// from the session's clock. TestPauseProcess is expected to fail then.
	pauseEnvNegative = "ZKGEN_PAUSE_NEGATIVE"
)

const (
	pauseSessionTimeout = 2 * time.Second
	pauseTTL            = 1500 * time.Millisecond
	pauseTTLSession     = 10 * time.Second // the lease, not the session, must end
	pauseGap            = time.Second      // an iteration this late follows the resume
	pauseChildLife      = 60 * time.Second // a child never outlives this
	pausePartitions     = 4
	pauseAttempts       = 3
)

// pauseKind is one tenure under test.
type pauseKind struct {
	name     string // subtest
	child    string // pauseEnvKind
	ttl      bool   // a TTL lease: on the TTL server, no context
	ctxFirst bool
	sentinel error // the loss error of its Guarded
}

var pauseKinds = []pauseKind{
	{name: "lock", child: "lock", sentinel: runtime.ErrLockLost},
	{name: "lock-ctx-first", child: "lock", ctxFirst: true, sentinel: runtime.ErrLockLost},
	{name: "rwlock-write", child: "rwlock", sentinel: runtime.ErrLockLost},
	{name: "semaphore", child: "semaphore", sentinel: runtime.ErrLockLost},
	{name: "election", child: "election", sentinel: runtime.ErrLeadershipLost},
	{name: "group", child: "group", sentinel: runtime.ErrMembershipLost},
	{name: "partitioner", child: "partitioner", sentinel: runtime.ErrPartitionLost},
	{name: "ttllease", child: "ttllease", ttl: true, sentinel: runtime.ErrLeaseExpired},
}

func pauseSentinel(child string) error {
	for _, k := range pauseKinds {
		if k.child == child {
			return k.sentinel
		}
	}
	return nil
}

// pauseReport is what the child prints after "resumed ".
type pauseReport struct {
	GapNS        int64  `json:"gapNS"`        // between the last iteration before the pause and this one
	Iterations   int    `json:"iterations"`   // before the pause
	Inconclusive bool   `json:"inconclusive"` // the pause fell inside the iteration's checks
	Negative     bool   `json:"negative"`     // pauseEnvNegative: derived-context answers
	Order        string `json:"order"`        // the checks, in the order made
	// NoticedBefore: the tenure's end had been acted on by a goroutine
	// before the first check (a context derived from the tenure's was
	// cancelled already); "n/a" without a context.
	NoticedBefore string `json:"noticedBefore"`
	Held          bool   `json:"held"`
	HasCtx        bool   `json:"hasCtx"`
	CtxErr        string `json:"ctxErr"` // "" when nil
	Owns          *bool  `json:"owns,omitempty"`
	GuardedErr    string `json:"guardedErr"` // "" when the write succeeded
	GuardedIs     bool   `json:"guardedIs"`  // errors.Is(err, the kind's sentinel)
}

// pauseTenure is the child's tenure, as its loop asks about it.
type pauseTenure struct {
	node    string
	token   int64
	held    func() bool
	ctx     func() context.Context // nil: the tenure has none (a TTL lease)
	owns    func() bool            // nil unless a partitioner (partition 0)
	guarded func(context.Context, ...any) error
	renew   func(context.Context) error // nil unless a TTL lease
}

// pauseTake takes the tenure of kind under root: in the child, and
// (taker) in the parent once the child's is gone. who names the holder.
func pauseTake(ctx context.Context, kind string, s *runtime.Session, root, who string, ttl time.Duration) (*pauseTenure, error) {
	dir := runtime.At(root + "/" + kind)
	switch kind {
	case "lock", "rwlock":
		var l runtime.LockHandle = runtime.NewLock(s, dir)
		if kind == "rwlock" {
			l = runtime.NewRWLock(s, dir).Write()
		}
		h, ok := l.(interface{ Held() bool })
		if !ok {
			return nil, fmt.Errorf("%T has no Held", l)
		}
		if err := l.Lock(ctx); err != nil {
			return nil, err
		}
		hs, err := l.Holders(ctx)
		if err != nil {
			return nil, err
		}
		var node string
		for _, x := range hs {
			if x.Holds {
				node = x.Node
			}
		}
		if node == "" {
			return nil, fmt.Errorf("holding, but no holder among %v", hs)
		}
		return &pauseTenure{node: node, token: l.Token(), held: h.Held, ctx: l.Context,
			guarded: func(ctx context.Context, ops ...any) error { _, err := l.Guarded(ctx, ops...); return err }}, nil
	case "semaphore":
		le, err := runtime.NewSemaphore(s, dir, 1).Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return &pauseTenure{node: le.Node(), token: le.Token(), held: le.Held, ctx: le.Context,
			guarded: func(ctx context.Context, ops ...any) error { _, err := le.Guarded(ctx, ops...); return err }}, nil
	case "election":
		ld, err := runtime.NewElection(s, dir, runtime.StringCodec()).Campaign(ctx, who)
		if err != nil {
			return nil, err
		}
		return &pauseTenure{node: ld.Node(), token: ld.Epoch(), held: ld.Held, ctx: ld.Context,
			guarded: func(ctx context.Context, ops ...any) error { _, err := ld.Guarded(ctx, ops...); return err }}, nil
	case "group":
		m, err := runtime.NewGroup(s, dir, runtime.StringCodec()).Join(ctx, who)
		if err != nil {
			return nil, err
		}
		return &pauseTenure{node: m.Node(), held: m.Held, ctx: m.Context,
			guarded: func(ctx context.Context, ops ...any) error { _, err := m.Guarded(ctx, ops...); return err }}, nil
	case "partitioner":
		// Partition 0 owned: the child joins alone and owns them all; the
		// parent joins after the child's session is gone and waits for 0.
		got0 := make(chan struct{})
		var once sync.Once
		a, err := runtime.NewPartitioner(s, dir, pausePartitions, runtime.StringCodec()).Join(ctx, who,
			runtime.WithRebalanceDelay(0),
			runtime.WithPartitionHooks(func(i int) {
				if i == 0 {
					once.Do(func() { close(got0) })
				}
			}, nil))
		if err != nil {
			return nil, err
		}
		select {
		case <-got0:
		case <-ctx.Done():
			return nil, fmt.Errorf("partition 0 not acquired (own %v): %w", a.Current(), ctx.Err())
		}
		return &pauseTenure{node: a.Node(), token: a.Token(0), held: a.Held, ctx: a.Context,
			owns:    func() bool { return a.Owns(0) },
			guarded: func(ctx context.Context, ops ...any) error { _, err := a.Guarded(ctx, 0, ops...); return err }}, nil
	case "ttllease":
		le, err := runtime.NewTTLLeases(s, dir, 1, ttl).Acquire(ctx, who)
		if err != nil {
			return nil, err
		}
		return &pauseTenure{node: le.Node(), token: le.Token(), held: le.Held, renew: le.Renew,
			guarded: func(ctx context.Context, ops ...any) error { _, err := le.Guarded(ctx, ops...); return err }}, nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// TestPauseChild is the holder process of TestPauseProcess and
// TestPauseProcessKilled; it skips unless run by them.
func TestPauseChild(t *testing.T) {
	kind := os.Getenv(pauseEnvKind)
	if kind == "" {
		t.Skip("the holder process of TestPauseProcess*: runs only as their child")
	}
	ctx, fail, timeout := childStart(t)
	root := os.Getenv(pauseEnvRoot)
	s, err := runtime.Connect(ctx, strings.Split(os.Getenv(pauseEnvServers), ","), runtime.WithSessionTimeout(timeout))
	if err != nil {
		fail("connect: %v", err)
	}
	defer s.Close()
	tn, err := pauseTake(ctx, kind, s, root, "child", pauseTTL)
	if err != nil {
		fail("take %s: %v", kind, err)
	}
	sentinel := pauseSentinel(kind)
	negative := os.Getenv(pauseEnvNegative) == "1" && tn.ctx != nil
	ctxFirst := os.Getenv(pauseEnvCtxFirst) == "1"

	// The application's context, asked each iteration; and one derived from
	// it, which tells whether a goroutine of the runtime has acted on the
	// end (it does not consult the session's clock).
	var tctx, derived context.Context
	if tn.ctx != nil {
		tctx = tn.ctx()
		var dcancel context.CancelFunc
		derived, dcancel = context.WithCancel(tctx)
		defer dcancel()
	}
	held, ctxErr := tn.held, func() error { return tctx.Err() }
	if negative {
		held, ctxErr = func() bool { return derived.Err() == nil }, derived.Err
	}

	// The parent may stop us as soon as this line is out, before the
	// first iteration: the line counts as the previous iteration.
	prev := time.Now()
	lastRenew := prev
	fmt.Printf("held %s %d\n", tn.node, tn.token)
	for iter := 0; ; iter++ {
		t0 := time.Now()
		rep := pauseReport{Negative: negative, NoticedBefore: "n/a", HasCtx: tn.ctx != nil}
		if derived != nil {
			rep.NoticedBefore = fmt.Sprint(derived.Err() != nil)
		}
		var order []string
		askHeld := func() { rep.Held = held(); order = append(order, "Held") }
		askCtx := func() {
			if tn.ctx != nil {
				if err := ctxErr(); err != nil {
					rep.CtxErr = err.Error()
				}
				order = append(order, "Context().Err")
			}
		}
		if ctxFirst {
			askCtx()
			askHeld()
		} else {
			askHeld()
			askCtx()
		}
		if tn.owns != nil && !negative {
			o := tn.owns()
			rep.Owns = &o
			order = append(order, "Owns(0)")
		}
		t1 := time.Now()
		rep.Order = strings.Join(order, ",")
		if t0.Sub(prev) > pauseGap || t1.Sub(t0) > pauseGap {
			// The first iteration after the resume, unless the pause fell
			// between t0 and t1: then the checks may have run before it.
			rep.GapNS = int64(t0.Sub(prev))
			rep.Inconclusive = t1.Sub(t0) > pauseGap
			rep.Iterations = iter
			gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
			err := tn.guarded(gctx, &zk.SetDataRequest{Path: root + "/fenced", Data: []byte("stale"), Version: -1})
			gcancel()
			if err != nil {
				rep.GuardedErr = err.Error()
				rep.GuardedIs = errors.Is(err, sentinel)
			}
			out, _ := json.Marshal(rep)
			fmt.Printf("resumed %s\n", out)
			return
		}
		if !rep.Held {
			fail("tenure lost before any pause (iteration %d): %+v", iter, rep)
		}
		if tn.renew != nil && time.Since(lastRenew) >= pauseTTL/3 {
			if err := tn.renew(ctx); err != nil {
				fail("renew before any pause: %v", err)
			}
			lastRenew = time.Now()
		}
		if ctx.Err() != nil {
			fail("no pause within %v", pauseChildLife)
		}
		prev = t0
		time.Sleep(time.Millisecond) // the workload's cadence
	}
}

// childStart starts a child process's test: it returns a context that
// ends pauseChildLife from now, a fail that also prints "error ..." for
// the parent, and the session timeout the parent gave.
func childStart(t *testing.T) (context.Context, func(string, ...any), time.Duration) {
	fail := func(format string, args ...any) {
		fmt.Printf("error "+format+"\n", args...)
		t.Fatalf(format, args...)
	}
	// Never run forever, even if the parent forgets us: the 60 s bound
	// of ctx, this, and -test.timeout.
	watchdog := time.AfterFunc(pauseChildLife+10*time.Second, func() {
		fmt.Println("error child watchdog: ran out of time")
		os.Exit(3)
	})
	t.Cleanup(func() { watchdog.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), pauseChildLife)
	t.Cleanup(cancel)
	timeout, err := time.ParseDuration(os.Getenv(pauseEnvTimeout))
	if err != nil {
		fail("session timeout: %v", err)
	}
	return ctx, fail, timeout
}

// pauseChild is a running holder process.
type pauseChild struct {
	t        *testing.T
	cmd      *exec.Cmd
	pid      int
	lines    chan string   // "held ...", "resumed ...", "error ..."
	scanned  chan struct{} // closed when stdout is read to its end
	exited   chan struct{} // closed when the process is reaped
	waitErr  error         // after exited
	stdin    io.WriteCloser
	out, err *pauseBuffer
}

type pauseBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *pauseBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *pauseBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startPauseChild runs the test binary as TestPauseChild holding kind
// under root. It is killed (by PID) and reaped at the end of the test.
func startPauseChild(t *testing.T, k pauseKind, servers []string, root string, timeout time.Duration) *pauseChild {
	t.Helper()
	ctxFirst := "0"
	if k.ctxFirst {
		ctxFirst = "1"
	}
	return startChild(t, "TestPauseChild", []string{"held ", "resumed ", "error "},
		pauseEnvKind+"="+k.child,
		pauseEnvServers+"="+strings.Join(servers, ","),
		pauseEnvRoot+"="+root,
		pauseEnvTimeout+"="+timeout.String(),
		pauseEnvCtxFirst+"="+ctxFirst,
		// TestMain then starts no server of its own: it points at ours.
		"ZK_SERVERS="+strings.Join(servers, ","),
	)
}

// startChild runs the test binary as the test run, with env added to
// ours; its stdout lines that start with one of prefixes are what expect
// returns, and stdin is a pipe (closing it is a way to tell the child
// to finish). It is killed (by PID) and reaped at the end of the test.
func startChild(t *testing.T, run string, prefixes []string, env ...string) *pauseChild {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+run+"$", "-test.count=1", "-test.timeout=90s")
	cmd.Env = append(os.Environ(), env...)
	c := &pauseChild{t: t, cmd: cmd, lines: make(chan string, 16), scanned: make(chan struct{}),
		exited: make(chan struct{}), out: &pauseBuffer{}, err: &pauseBuffer{}}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = c.err
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// Killed with us if this process dies without its cleanups, even
	// while stopped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the holder process: %v", err)
	}
	c.pid = cmd.Process.Pid
	go func() {
		c.waitErr = cmd.Wait()
		pw.Close()
		close(c.exited)
	}()
	go func() {
		defer close(c.scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(c.out, line)
			for _, p := range prefixes {
				if strings.HasPrefix(line, p) {
					select {
					case c.lines <- line:
					default:
					}
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		_ = syscall.Kill(c.pid, syscall.SIGKILL) // this child, by its PID; stopped or not
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("holder process %d not reaped 10s after SIGKILL", c.pid)
		}
	})
	return c
}

// output is the child's output so far, for failure messages.
func (c *pauseChild) output() string {
	return fmt.Sprintf("holder process %d stdout:\n%s\nstderr:\n%s", c.pid, c.out.String(), c.err.String())
}

// expect returns the child's next line, which must start with prefix.
func (c *pauseChild) expect(ctx context.Context, prefix string) string {
	c.t.Helper()
	var line string
	select {
	case line = <-c.lines:
	case <-c.scanned:
		select {
		case line = <-c.lines:
		default:
			<-c.exited
			c.t.Fatalf("holder process exited (%v) without printing %q\n%s", c.waitErr, prefix, c.output())
		}
	case <-ctx.Done():
		c.t.Fatalf("no %q line from the holder process: %v\n%s", prefix, ctx.Err(), c.output())
	}
	if !strings.HasPrefix(line, prefix) {
		c.t.Fatalf("holder process printed %q, want %q...\n%s", line, prefix, c.output())
	}
	return line
}

// wait waits for the child to exit and returns how it did.
func (c *pauseChild) wait(ctx context.Context) error {
	c.t.Helper()
	select {
	case <-c.exited:
		return c.waitErr
	case <-ctx.Done():
		c.t.Fatalf("holder process %d did not exit: %v\n%s", c.pid, ctx.Err(), c.output())
		return nil
	}
}

func (c *pauseChild) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := syscall.Kill(c.pid, sig); err != nil {
		c.t.Fatalf("%v to holder process %d: %v", sig, c.pid, err)
	}
}

// parseHeld reads the child's "held <node> <token>".
func parseHeld(t *testing.T, line string) (string, int64) {
	t.Helper()
	var node string
	var token int64
	if _, err := fmt.Sscanf(line, "held %s %d", &node, &token); err != nil {
		t.Fatalf("bad held line %q: %v", line, err)
	}
	return node, token
}

// pauseFenced creates root/fenced, the node the guarded writes go to.
func pauseFenced(t *testing.T, ctx context.Context, s *runtime.Session, root string) string {
	t.Helper()
	fenced := root + "/fenced"
	if _, err := s.CreatePersistent(ctx, fenced); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Conn().Delete(fenced, -1) })
	return fenced
}

// TestPauseProcess: a holder frozen past its session timeout (a TTL lease:
// past its TTL) while another process takes its tenure over; its first
// check after the resume says lost, and its guarded write is refused.
func TestPauseProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: processes and ZooKeeper")
	}
	if os.Getenv(pauseEnvNegative) == "1" {
		t.Logf("%s=1: the holders answer from a derived context (the control): failures expected", pauseEnvNegative)
	}
	for _, k := range pauseKinds {
		t.Run(k.name, func(t *testing.T) {
			for attempt := 1; attempt <= pauseAttempts; attempt++ {
				if !pauseAttempt(t, k) {
					return
				}
				t.Logf("attempt %d inconclusive: the pause fell inside the holder's checks; again", attempt)
			}
			t.Fatalf("%d attempts inconclusive", pauseAttempts)
		})
	}
}

// pauseAttempt runs one freeze and takeover of kind k; it reports whether
// it was inconclusive (the pause fell inside the child's checks: nothing
// was asserted about them).
func pauseAttempt(t *testing.T, k pauseKind) (inconclusive bool) {
	srvServers := func() []string {
		if k.ttl {
			return ttlServer(t).Servers()
		}
		return server(t).Servers()
	}()
	timeout := pauseSessionTimeout
	if k.ttl {
		timeout = pauseTTLSession
	}
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	ps := connect(t, srvServers)
	fenced := pauseFenced(t, ctx, ps, root)

	c := startPauseChild(t, k, srvServers, root, timeout)
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	node, childToken := parseHeld(t, c.expect(hctx, "held "))
	hcancel()

	c.signal(syscall.SIGSTOP)
	stopped := time.Now()
	why := "the server expires the frozen holder's session"
	if k.ttl {
		why = "the server removes the lease node after its TTL"
	}
	gctx, gcancel := context.WithTimeout(ctx, 10*timeout)
	t.Logf("waiting until %s is gone: %s", node, why)
	waitGone(t, gctx, ps, node)
	gcancel()
	gone := time.Since(stopped)

	// The takeover, on the parent's own session, and a write under it.
	taker, err := pauseTake(ctx, k.child, ps, root, "parent", pauseTTL)
	if err != nil {
		t.Fatalf("taking the %s over: %v\n%s", k.name, err, c.output())
	}
	if err := taker.guarded(ctx, &zk.SetDataRequest{Path: fenced, Data: []byte("parent"), Version: -1}); err != nil {
		t.Fatalf("the new holder's guarded write: %v", err)
	}
	data, st, err := ps.Conn().Get(fenced)
	if err != nil || string(data) != "parent" {
		t.Fatalf("fenced after the new holder's write: %q, %v", data, err)
	}
	took := time.Since(stopped)

	c.signal(syscall.SIGCONT)
	resumed := time.Since(stopped)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	line := c.expect(rctx, "resumed ")
	rcancel()
	var rep pauseReport
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "resumed ")), &rep); err != nil {
		t.Fatalf("bad resumed line %q: %v", line, err)
	}
	t.Logf("frozen %v (holder's node gone at +%v, taken over at +%v); child: %s",
		resumed.Round(time.Millisecond), gone.Round(time.Millisecond), took.Round(time.Millisecond), line)
	if err := c.wait(ctx); err != nil {
		t.Errorf("holder process: %v\n%s", err, c.output())
	}
	if e := strings.TrimSpace(c.err.String()); e != "" {
		t.Logf("child stderr:\n%s", e)
	}
	if t.Failed() {
		return false
	}
	if rep.Inconclusive {
		t.Logf("child output:\n%s", c.output())
		return true
	}

	// The report is about our pause, not some other stall.
	if gap := time.Duration(rep.GapNS); gap < resumed-100*time.Millisecond {
		t.Fatalf("the child's gap (%v) is shorter than the pause (%v): it reported another stall\n%s", gap, resumed, c.output())
	}
	// (a) the first check after the resume says lost.
	if rep.Held {
		t.Errorf("first check after the resume: Held() = true (checks %s; a goroutine had noticed before: %s)\n%s",
			rep.Order, rep.NoticedBefore, c.output())
	}
	if rep.HasCtx && rep.CtxErr == "" {
		t.Errorf("first check after the resume: Context().Err() = nil (checks %s; a goroutine had noticed before: %s)\n%s",
			rep.Order, rep.NoticedBefore, c.output())
	}
	if k.child == "partitioner" && (rep.Owns == nil || *rep.Owns) && !rep.Negative {
		t.Errorf("first check after the resume: Owns(0) = %v, want false", rep.Owns)
	}
	// (b) the guarded write is refused with the tenure's loss error...
	switch {
	case rep.GuardedErr == "":
		t.Errorf("the resumed holder's guarded write succeeded")
	case !rep.GuardedIs:
		t.Errorf("the resumed holder's guarded write: %s; want an error wrapping %v", rep.GuardedErr, k.sentinel)
	}
	// ...and not applied.
	data2, st2, err := ps.Conn().Get(fenced)
	if err != nil {
		t.Fatal(err)
	}
	if string(data2) != "parent" || st2.Version != st.Version || st2.Mzxid != st.Mzxid {
		t.Errorf("fenced changed after the resume: %q version %d (was %q version %d)", data2, st2.Version, data, st.Version)
	}
	// Fencing tokens grow across holders.
	if childToken != 0 && taker.token <= childToken {
		t.Errorf("token of the new holder %d, of the frozen one %d: want greater", taker.token, childToken)
	}
	if !k.ttl && !taker.held() { // (a TTL lease not renewed may be over by now)
		t.Errorf("the new holder's tenure is not held after the resume")
	}
	return false
}

// TestPauseProcessKilled: a holder killed with SIGKILL; once the server
// expires its session another process takes the lock over, and nothing
// of the dead holder is left behind.
func TestPauseProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: processes and ZooKeeper")
	}
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	ps := connect(t, srv.Servers())
	fenced := pauseFenced(t, ctx, ps, root)
	k := pauseKinds[0] // the exclusive lock
	c := startPauseChild(t, k, srv.Servers(), root, pauseSessionTimeout)
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	node, childToken := parseHeld(t, c.expect(hctx, "held "))
	hcancel()

	c.signal(syscall.SIGKILL)
	killed := time.Now()
	err := c.wait(ctx)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("holder process ended with %v, want killed by SIGKILL", err)
	}
	gctx, gcancel := context.WithTimeout(ctx, 10*pauseSessionTimeout)
	waitGone(t, gctx, ps, node) // the server expires the dead holder's session
	gcancel()
	gone := time.Since(killed)

	dir := root + "/" + k.child
	l := runtime.NewLock(ps, runtime.At(dir))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hs, err := l.Holders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || !hs[0].Holds || hs[0].Node == node {
		t.Fatalf("lock nodes after the takeover: %+v (the dead holder's was %s)", hs, node)
	}
	token := l.Token()
	if token <= childToken {
		t.Errorf("token of the new holder %d, of the dead one %d: want greater", token, childToken)
	}
	if _, err := l.Guarded(ctx, &zk.SetDataRequest{Path: fenced, Data: []byte("parent"), Version: -1}); err != nil {
		t.Fatalf("the new holder's guarded write: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, ps, dir); len(kids) != 0 {
		t.Errorf("left behind in %s: %v", dir, kids)
	}
	t.Logf("killed holder's node gone %v after SIGKILL; lock taken over, token %d > %d", gone.Round(time.Millisecond), token, childToken)
}
