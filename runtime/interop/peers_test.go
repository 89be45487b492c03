package interop_test

import (
	"bytes"
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

	"github.com/zkgen/zkgen/runtime/zktest"
)

// Environment overrides for the peers.
const (
	// envCuratorClasspath is a complete classpath for Curator's recipes
	// (default: Debian's curator-recipes.jar, whose manifest names the rest).
	envCuratorClasspath = "CURATOR_CLASSPATH"
	// envKazooPython is a python with kazoo importable (default: the
	// system's /usr/bin/python3, where Debian installs python3-kazoo).
	envKazooPython = "KAZOO_PYTHON"
)

const (
	debianCuratorJar = "/usr/share/java/curator-recipes.jar"
	systemPython     = "/usr/bin/python3"
	// slf4jNop silences the Java peers' logging when present.
	slf4jNop = "/usr/share/java/slf4j-nop.jar"
)

var errNotInstalled = errors.New("peer library not installed")

const (
	curatorHint = "install Curator and a JDK with `apt-get install -y libcurator-recipes-java default-jdk-headless` " +
		"(or set " + envCuratorClasspath + " to a classpath holding curator-recipes, curator-framework, curator-client, zookeeper and guava)"
	kazooHint = "install kazoo with `apt-get install -y python3-kazoo` (for " + systemPython + "), " +
		"or set " + envKazooPython + " to a python that can import kazoo"
)

// requirePeer ends the test when a peer is unusable: a missing installation
// skips it (fails it under CI=true); any other error fails it.
func requirePeer(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, errNotInstalled) && !zktest.InCI() {
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

func jdkTool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", name); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: no %s on PATH (or in $JAVA_HOME/bin); %s", errNotInstalled, name, curatorHint)
	}
	return p, nil
}

func buildCurator() (*curatorPeer, error) {
	java, err := jdkTool("java")
	if err != nil {
		return nil, err
	}
	javac, err := jdkTool("javac")
	if err != nil {
		return nil, err
	}
	cp := os.Getenv(envCuratorClasspath)
	if cp == "" {
		if !isFile(debianCuratorJar) {
			return nil, fmt.Errorf("%w: %s not found; %s", errNotInstalled, debianCuratorJar, curatorHint)
		}
		cp = debianCuratorJar
		if isFile(slf4jNop) {
			cp += string(os.PathListSeparator) + slf4jNop
		}
	}
	src, err := filepath.Abs(filepath.Join("testdata", "CuratorContender.java"))
	if err != nil {
		return nil, err
	}
	out := filepath.Join(buildDir, "curator")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, javac, "-d", out, "-cp", cp, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		// A classpath without Curator shows up as missing packages.
		if bytes.Contains(msg, []byte("package org.apache.curator")) {
			return nil, fmt.Errorf("%w: javac finds no Curator classes on %q; %s", errNotInstalled, cp, curatorHint)
		}
		return nil, fmt.Errorf("javac %s: %v\n%s", src, err, msg)
	}
	return &curatorPeer{
		java:      java,
		classpath: out + string(os.PathListSeparator) + cp,
		version:   debianVersion("libcurator-recipes-java"),
	}, nil
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
	py := os.Getenv(envKazooPython)
	if py == "" {
		py = systemPython
	}
	if _, err := exec.LookPath(py); err != nil {
		return nil, fmt.Errorf("%w: no python at %s; %s", errNotInstalled, py, kazooHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", "from kazoo.version import __version__; import kazoo.client; print(__version__)").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s cannot import kazoo: %s; %s", errNotInstalled, py, firstLines(out, 3), kazooHint)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo_contender.py"))
	if err != nil {
		return nil, err
	}
	return &kazooPeer{python: py, script: script, version: strings.TrimSpace(string(out))}, nil
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
	roles   []string // m = mutex, r = read, w = write
	cycles  int
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
	out  *syncBuffer
	done chan struct{} // closed once the process has been reaped
	err  error         // exit status; read after done
}

// startPeer starts a process whose output is kept for the test's messages.
// The cleanup kills it by PID if it is still running and waits for it.
func startPeer(t *testing.T, name, bin string, args ...string) *peer {
	t.Helper()
	p := &peer{name: name, out: &syncBuffer{}, done: make(chan struct{})}
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
			return fmt.Errorf("%s failed: %v; output:\n%s", p.name, p.err, p.out.tail(40))
		}
		return nil
	case <-ctx.Done():
		p.kill()
		return fmt.Errorf("%s: %v; killed; output:\n%s", p.name, context.Cause(ctx), p.out.tail(40))
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

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tail returns the last n lines.
func (s *syncBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(s.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
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
