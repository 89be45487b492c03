package serve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// The end-to-end tests run zkgen serve as a process, beside processes that
// use the example's generated handles (actors: this test binary started
// again with envActor set), against a real ZooKeeper.

// envActor makes the test binary an actor connected to its value's servers.
const envActor = "ZKGEN_SERVE_ACTOR"

// exampleSpec is the spec the generated handles come from.
var exampleSpec, _ = filepath.Abs("../../generated_example/zkgen.yaml")

var (
	buildOnce sync.Once
	binDir    string
	binErr    error
)

func TestMain(m *testing.M) {
	if servers := os.Getenv(envActor); servers != "" {
		os.Exit(actorMain(strings.Split(servers, ",")))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// zkgenBinary builds cmd/zkgen once for the package's tests.
func zkgenBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "zkgen-serve-test"); binErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "zkgen"), "../../cmd/zkgen").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "zkgen")
}

// process runs a command for the test and kills it (by PID) at cleanup.
func process(t testing.TB, name string, args ...string) (*exec.Cmd, *lineReader) {
	t.Helper()
	return processIn(t, "", name, args...)
}

// processIn is process in directory dir.
func processIn(t testing.TB, dir, name string, args ...string) (*exec.Cmd, *lineReader) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lr := newLineReader(pr)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), lr.all())
		}
	})
	return cmd, lr
}

// lineReader collects a process's output lines and lets a test wait for
// one matching a pattern.
type lineReader struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced at each line
}

func newLineReader(r io.Reader) *lineReader {
	l := &lineReader{more: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			close(l.more)
			l.more = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// wait returns the submatches of the first line from index from on that
// matches re, and the index after it; it fails the test after bound.
func (l *lineReader) wait(t testing.TB, re *regexp.Regexp, from int, bound time.Duration) ([]string, int) {
	t.Helper()
	deadline := time.After(bound)
	for {
		l.mu.Lock()
		for i := from; i < len(l.lines); i++ {
			if m := re.FindStringSubmatch(l.lines[i]); m != nil {
				l.mu.Unlock()
				return m, i + 1
			}
		}
		from = len(l.lines)
		more := l.more
		l.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no output line matching %q within %v", re, bound)
		}
	}
}

func (l *lineReader) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// exampleClient opens a session to servers for the test (closed at its
// cleanup) and returns the example's generated client on it.
func exampleClient(t testing.TB, ctx context.Context, servers []string) *coord.Client {
	t.Helper()
	s, err := runtime.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return coord.New(s)
}

// provision creates the example spec's directories (zkgen provision).
func provision(t *testing.T, servers string) {
	t.Helper()
	out, err := exec.Command(zkgenBinary(t), "provision", "-f", exampleSpec, "--servers", servers).CombinedOutput()
	if err != nil {
		t.Fatalf("zkgen provision: %v\n%s", err, out)
	}
}

// startServe starts zkgen serve on the example spec and returns its base
// URL once it listens.
func startServe(t testing.TB, servers string, extra ...string) string {
	t.Helper()
	base, _ := startServePID(t, servers, extra...)
	return base
}

// startServePID is startServe that also returns serve's PID.
func startServePID(t testing.TB, servers string, extra ...string) (string, int) {
	t.Helper()
	args := append([]string{"serve", "-f", filepath.Base(exampleSpec), "--servers", servers, "--addr", "127.0.0.1:0", "--timeout", "2s"}, extra...)
	cmd, out := processIn(t, filepath.Dir(exampleSpec), zkgenBinary(t), args...)
	m, _ := out.wait(t, regexp.MustCompile(`zkgen serve: (http://127\.0\.0\.1:\d+)/`), 0, 30*time.Second)
	return m[1], cmd.Process.Pid
}

// actor is a process that uses the generated handles on the test's
// command: one line per command, one "ok <command>" or "err <command>:
// why" line per command once it has been carried out. Commands run
// concurrently, so one that blocks (a lock another holds) does not hold
// back the others.
type actor struct {
	t    *testing.T
	name string
	in   io.Writer
	out  *lineReader
	mu   sync.Mutex
	seen int
}

func startActor(t *testing.T, name, servers string) *actor {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envActor+"="+servers, "ZKGEN_ACTOR_NAME="+name)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &actor{t: t, name: name, in: in, out: newLineReader(pr)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		if t.Failed() {
			t.Logf("actor %s output:\n%s", name, a.out.all())
		}
	})
	a.out.wait(t, regexp.MustCompile(`^ready$`), 0, 30*time.Second)
	return a
}

// send sends a command without waiting for it.
func (a *actor) send(cmd string) {
	a.t.Helper()
	if _, err := fmt.Fprintln(a.in, cmd); err != nil {
		a.t.Fatalf("actor %s: %v", a.name, err)
	}
}

// done waits for cmd's reply and fails the test on an error reply.
func (a *actor) done(cmd string) string {
	a.t.Helper()
	m, _ := a.out.wait(a.t, regexp.MustCompile(`^(ok|err) `+regexp.QuoteMeta(cmd)+`(?:: (.*))?$`), 0, 60*time.Second)
	if m[1] == "err" {
		a.t.Fatalf("actor %s: %s: %s", a.name, cmd, m[2])
	}
	return m[2]
}

// do sends cmd and waits for it.
func (a *actor) do(cmd string) string {
	a.t.Helper()
	a.send(cmd)
	return a.done(cmd)
}

// actorMain is the actor process: it reads commands from stdin.
func actorMain(servers []string) int {
	ctx := context.Background()
	sess, err := runtime.Connect(ctx, servers)
	if err != nil {
		fmt.Println("connect:", err)
		return 1
	}
	st := &actorState{c: coord.New(sess), name: os.Getenv("ZKGEN_ACTOR_NAME"), locks: map[int]coord.OrderLockHandle{}}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	var out sync.Mutex
	for sc.Scan() {
		line := sc.Text()
		go func() {
			res, err := st.run(ctx, line)
			out.Lock()
			defer out.Unlock()
			if err != nil {
				fmt.Printf("err %s: %v\n", line, err)
				return
			}
			if res != "" {
				fmt.Printf("ok %s: %s\n", line, res)
				return
			}
			fmt.Printf("ok %s\n", line)
		}()
	}
	return 0
}

type actorState struct {
	c     *coord.Client
	name  string
	mu    sync.Mutex
	locks map[int]coord.OrderLockHandle
	held  []*runtime.Delivery[coord.Job]
	lead  *runtime.Leadership[coord.Member]
	part  *runtime.Assignment[coord.Member]
}

func (s *actorState) run(ctx context.Context, line string) (string, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", errors.New("empty command")
	}
	n := 0
	if len(f) > 1 {
		n, _ = strconv.Atoi(f[1])
	}
	me := coord.Member{Host: s.name, Port: os.Getpid()}
	switch f[0] {
	case "lock":
		l := s.c.OrderLock(n)
		l.SetPurpose("e2e " + s.name)
		if err := l.Lock(ctx); err != nil {
			return "", err
		}
		s.mu.Lock()
		s.locks[n] = l
		s.mu.Unlock()
	case "unlock":
		s.mu.Lock()
		l := s.locks[n]
		delete(s.locks, n)
		s.mu.Unlock()
		if l == nil {
			return "", errors.New("not held")
		}
		return "", l.Unlock(ctx)
	case "put": // at-least-once FIFO
		for i := range n {
			if err := s.c.Outbox().Put(ctx, coord.Job{Name: fmt.Sprint(s.name, "-", i)}); err != nil {
				return "", err
			}
		}
	case "take": // claims, held until ack
		for range n {
			d, err := s.c.Outbox().Take(ctx)
			if err != nil {
				return "", err
			}
			s.mu.Lock()
			s.held = append(s.held, d)
			s.mu.Unlock()
		}
	case "ack":
		s.mu.Lock()
		held := s.held
		s.held = nil
		s.mu.Unlock()
		for _, d := range held {
			if err := d.Ack(ctx); err != nil {
				return "", err
			}
		}
	case "dead":
		return "", s.poison(ctx, n)
	case "lease": // a TTL lease, never renewed: it lapses after its TTL
		_, err := s.c.Leases().Acquire(ctx, s.name)
		return "", err
	case "campaign":
		l, err := s.c.Scheduler().Campaign(ctx, me)
		if err != nil {
			return "", err
		}
		s.mu.Lock()
		s.lead = l
		s.mu.Unlock()
		return strconv.FormatInt(l.Epoch(), 10), nil
	case "resign":
		s.mu.Lock()
		l := s.lead
		s.mu.Unlock()
		return "", l.Resign(ctx)
	case "join":
		a, err := s.c.Shards().Join(ctx, me)
		if err != nil {
			return "", err
		}
		s.mu.Lock()
		s.part = a
		s.mu.Unlock()
	case "leave":
		s.mu.Lock()
		a := s.part
		s.mu.Unlock()
		return "", a.Leave(ctx)
	default:
		return "", fmt.Errorf("unknown command %q", f[0])
	}
	return "", nil
}

// poison puts n outbox items and fails every delivery until all n are
// dead letters (dead_letter_after: 3).
func (s *actorState) poison(ctx context.Context, n int) error {
	q := s.c.Outbox()
	for i := range n {
		if err := q.Put(ctx, coord.Job{Name: fmt.Sprint("poison-", i)}); err != nil {
			return err
		}
	}
	for {
		dead, err := q.DeadLetters(ctx)
		if err != nil {
			return err
		}
		if len(dead) >= n {
			return nil
		}
		d, err := q.Take(ctx)
		if err != nil {
			return err
		}
		if err := d.Nack(ctx, errors.New("poison")); err != nil {
			return err
		}
	}
}
