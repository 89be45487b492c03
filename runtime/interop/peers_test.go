package interop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/internal/peers"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// requirePeer ends the test when a peer is unusable: a missing installation
// skips it (fails it under CI=true); any other error fails it.
func requirePeer(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, peers.ErrNotInstalled) && !zktest.InCI() {
		t.Skip(err.Error())
	}
	t.Fatal(err.Error())
}

// curatorPeer runs testdata/CuratorContender.java.
type curatorPeer struct {
	java      string
	classpath string // Curator's classpath plus the compiled contender
	version   string
}

var (
	curatorOnce sync.Once
	curatorVal  *curatorPeer
	curatorErr  error
)

// curator returns the Java peer, compiling the contender on first use (once
// per test binary), or ends the test when Curator or a JDK is missing.
func curator(t *testing.T) *curatorPeer {
	t.Helper()
	curatorOnce.Do(func() { curatorVal, curatorErr = buildCurator() })
	requirePeer(t, curatorErr)
	return curatorVal
}

func buildCurator() (*curatorPeer, error) {
	src, err := filepath.Abs(filepath.Join("testdata", "CuratorContender.java"))
	if err != nil {
		return nil, err
	}
	java, cp, err := peers.Curator(src, filepath.Join(buildDir, "curator"))
	if err != nil {
		return nil, err
	}
	return &curatorPeer{java: java, classpath: cp, version: debianVersion("libcurator-recipes-java")}, nil
}

// start runs one contender process; see the top of CuratorContender.java for
// the arguments.
func (c *curatorPeer) start(t *testing.T, args peerArgs) *peer {
	t.Helper()
	argv := append([]string{"-Xmx96m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", c.classpath, "CuratorContender"}, args.list()...)
	return startPeer(t, args.name, c.java, argv...)
}

// kazooPeer runs testdata/kazoo_contender.py.
type kazooPeer struct {
	python  string
	script  string
	version string
}

var (
	kazooOnce sync.Once
	kazooVal  *kazooPeer
	kazooErr  error
)

// kazoo returns the Python peer, or ends the test when kazoo is missing.
func kazoo(t *testing.T) *kazooPeer {
	t.Helper()
	kazooOnce.Do(func() { kazooVal, kazooErr = findKazoo() })
	requirePeer(t, kazooErr)
	return kazooVal
}

func findKazoo() (*kazooPeer, error) {
	py, version, err := peers.Kazoo()
	if err != nil {
		return nil, err
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo_contender.py"))
	if err != nil {
		return nil, err
	}
	return &kazooPeer{python: py, script: script, version: version}, nil
}

// start runs one contender process; see the top of kazoo_contender.py for
// the arguments.
func (k *kazooPeer) start(t *testing.T, args peerArgs) *peer {
	t.Helper()
	return startPeer(t, args.name, k.python, append([]string{"-u", k.script}, args.list()...)...)
}

// peerArgs are a Java or Python contender's arguments.
type peerArgs struct {
	zk      []string
	path    string
	referee string
	name    string   // process name; its threads are <name>-<i>-<role>
	roles   []string // m = mutex, r = read, w = write, e = election, s = semaphore, c/k/a = counters
	cycles  int
	leases  int           // a semaphore's leases
	members int           // the group size a g thread waits for
	holdR   time.Duration // inside a read critical section
	holdX   time.Duration // inside an exclusive one
	timeout time.Duration // bound on each acquire
}

func (a peerArgs) list() []string {
	timeout := a.timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	return []string{
		"zk=" + strings.Join(a.zk, ","),
		"path=" + a.path,
		"referee=" + a.referee,
		"name=" + a.name,
		"roles=" + strings.Join(a.roles, ","),
		"cycles=" + strconv.Itoa(a.cycles),
		"hold_ms_r=" + strconv.FormatInt(a.holdR.Milliseconds(), 10),
		"hold_ms_x=" + strconv.FormatInt(a.holdX.Milliseconds(), 10),
		"timeout_s=" + strconv.FormatInt(int64(timeout/time.Second), 10),
		"leases=" + strconv.Itoa(max(a.leases, 1)),
		"members=" + strconv.Itoa(max(a.members, 1)),
	}
}

// who lists the referee names of the contenders a peer runs, with the
// cycles each must complete.
func (a peerArgs) who(into map[string]int) {
	for i, r := range a.roles {
		into[fmt.Sprintf("%s-%d-%s", a.name, i, r)] = a.cycles
	}
}

// peer is one contender process.
type peer struct {
	name string
	cmd  *exec.Cmd
	out  *peers.Output
	done chan struct{} // closed once the process has been reaped
	err  error         // exit status; read after done
}

// startPeer starts a process whose output is kept for the test's messages.
// The cleanup kills it by PID if it is still running and waits for it.
func startPeer(t *testing.T, name, bin string, args ...string) *peer {
	t.Helper()
	p := &peer{name: name, out: &peers.Output{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	p.cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	if err := zktest.StartCommand(p.cmd); err != nil {
		t.Fatalf("start %s (%s): %v", name, bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

// kill ends the process (by PID) if it is still running and reaps it.
func (p *peer) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

// wait returns once the process has exited: nil if it exited 0. When ctx
// ends first it kills the process and returns an error with its output.
func (p *peer) wait(ctx context.Context) error {
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s failed: %v; output:\n%s", p.name, p.err, p.out.Tail(40))
		}
		return nil
	case <-ctx.Done():
		p.kill()
		return fmt.Errorf("%s: %v; killed; output:\n%s", p.name, context.Cause(ctx), p.out.Tail(40))
	}
}

// summaries returns the "summary ..." lines the process printed.
func (p *peer) summaries() []string {
	var out []string
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.HasPrefix(l, "summary ") {
			out = append(out, strings.TrimPrefix(l, "summary "))
		}
	}
	return out
}

// debianVersion returns an installed Debian package's version, or "" (for
// the test log only).
func debianVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		return ""
	}
	return string(out)
}
