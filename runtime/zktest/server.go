package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	standaloneMain = "org.apache.zookeeper.server.ZooKeeperServerMain"
	quorumMain     = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	// stopTimeout bounds the wait for a killed process to be reaped.
	stopTimeout = 30 * time.Second
	// pollInterval is the period of readiness polls.
	pollInterval = 50 * time.Millisecond
	// bindAttempts is how often a fresh start retries with new ports when
	// another process took a port between allocation and bind.
	bindAttempts = 3
	// startMarker begins the line written to the log before each start.
	startMarker = "=== zktest: starting "
)

// ErrExternal is returned by the process-control methods of a Server that
// points at external servers (see EnvServers).
var ErrExternal = errors.New("zktest: server is external (" + EnvServers + " is set); it has no process to control")

// Server is one ZooKeeper server process, or a set of external servers when
// EnvServers is set (see External). A Server started with Start or
// StartProcess listens on 127.0.0.1 on a free port and keeps its data in a
// directory of its own, both of which survive Stop and Restart.
//
// Methods are safe for concurrent use.
type Server struct {
	cfg        config
	inst       install
	external   bool
	addrs      []string
	port       int
	tlsPort    int    // WithTLS's secureClientPort; 0 without
	dir        string // zoo.cfg, zookeeper.log and data/ live here
	ownDir     bool   // remove dir on Close
	mainClass  string
	standalone bool // readiness means "serving standalone", not just imok

	mu     sync.Mutex // serialises Start, Stop and Close
	proc   *process
	closed bool
	pid    atomic.Int64
}

// process is one run of a server's JVM.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been reaped
	err  error         // exit status; read only after done is closed
}

// Start starts a standalone ZooKeeper for the test and registers a cleanup
// that kills it (by PID), waits for it and removes its directory. It returns
// once the server serves requests. When EnvServers is set it starts nothing
// and returns a Server pointing at those servers.
//
// If java or ZooKeeper is missing, Start skips the test with instructions,
// or fails it when the CI environment variable is true.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := StartProcess(opts...)
	if err != nil {
		handleStartErr(tb, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() && !s.external {
			tb.Logf("zktest: log tail of %s (%s):\n%s", s.Addr(), s.LogPath(), s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			tb.Errorf("zktest: %v", err)
		}
	})
	return s
}

// StartProcess is Start without a testing.TB, for use in TestMain. The
// caller must Close the server. A missing installation is reported as an
// error wrapping ErrNotInstalled. When EnvServers is set it starts nothing
// and returns a Server pointing at those servers.
func StartProcess(opts ...Option) (*Server, error) {
	if ext := externalServers(); len(ext) > 0 {
		return &Server{external: true, addrs: ext}, nil
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	inst, err := findInstall()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "zktest-")
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        cfg,
		inst:       inst,
		dir:        dir,
		ownDir:     true,
		mainClass:  standaloneMain,
		standalone: true,
	}
	if err := os.MkdirAll(s.DataDir(), 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		n := 1
		if cfg.tls != nil {
			n = 2
		}
		ports, err := freePorts(n)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		s.setPort(ports[0])
		if cfg.tls != nil {
			s.tlsPort = ports[1]
		}
		if err := s.writeConfig(nil); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		err = s.Start()
		if err == nil {
			return s, nil
		}
		if attempt < bindAttempts && s.portClash() {
			continue
		}
		_ = s.Close()
		return nil, err
	}
}

func (s *Server) setPort(p int) {
	s.port = p
	s.addrs = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(p))}
}

// writeConfig writes zoo.cfg; quorum holds the ensemble-only lines.
func (s *Server) writeConfig(quorum []string) error {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	lines := []string{
		"tickTime=" + ms(s.cfg.tick),
		"dataDir=" + s.DataDir(),
		"clientPort=" + strconv.Itoa(s.port),
		"clientPortAddress=127.0.0.1",
		"minSessionTimeout=" + ms(s.cfg.minSession),
		"maxSessionTimeout=" + ms(s.cfg.maxSession),
		"maxClientCnxns=0",
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"forceSync=no",
		"preAllocSize=1024",
	}
	lines = append(lines, quorum...)
	lines = append(lines, s.tlsConfigLines()...)
	for _, kv := range s.cfg.extra {
		lines = append(lines, kv[0]+"="+kv[1])
	}
	return os.WriteFile(s.configPath(), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (s *Server) configPath() string { return filepath.Join(s.dir, "zoo.cfg") }

// Addr returns the client address, "127.0.0.1:port" for a local server; for
// an external one it is the first address of EnvServers.
func (s *Server) Addr() string { return s.addrs[0] }

// Servers returns the client addresses to pass to a ZooKeeper client.
func (s *Server) Servers() []string { return append([]string(nil), s.addrs...) }

// External reports whether the Server points at servers named by
// EnvServers rather than at a process of its own. Such a Server's Stop,
// Start and Restart return ErrExternal; see RequireLocal.
func (s *Server) External() bool { return s.external }

// RequireLocal skips the test when s is external, for tests that need to
// stop or restart the server.
func (s *Server) RequireLocal(tb testing.TB) {
	tb.Helper()
	if s.external {
		tb.Skip("zktest: test needs a local ZooKeeper process but " + EnvServers + " is set")
	}
}

// PID returns the process id of the running server, or 0 when it is stopped,
// has exited on its own, or is external.
func (s *Server) PID() int { return int(s.pid.Load()) }

// Running reports whether the server's process is alive.
func (s *Server) Running() bool { return s.PID() != 0 }

// Dir returns the server's working directory (holding zoo.cfg, the log and
// the data directory); empty for an external server.
func (s *Server) Dir() string { return s.dir }

// DataDir returns the ZooKeeper dataDir; empty for an external server.
func (s *Server) DataDir() string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, "data")
}

// LogPath returns the file receiving the server's stdout and stderr (its
// log), appended to across restarts; empty for an external server.
func (s *Server) LogPath() string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, "zookeeper.log")
}

// LogTail returns up to the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	if s.external {
		return ""
	}
	return tailFile(s.LogPath(), n)
}

// Start starts the server's process again after Stop, on the same port and
// with the same data, and waits until it is ready. It does nothing if the
// process is running.
func (s *Server) Start() error {
	if s.external {
		return ErrExternal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("zktest: server is closed")
	}
	if s.proc != nil {
		select {
		case <-s.proc.done:
			s.proc = nil // died on its own; start afresh
		default:
			return nil
		}
	}
	if err := s.spawn(); err != nil {
		return err
	}
	if err := s.waitReady(time.Now().Add(s.cfg.startTimeout)); err != nil {
		_ = s.stopLocked()
		return err
	}
	return nil
}

// Stop kills the server's process by PID (SIGKILL, like a crash) and waits
// until it has exited. Its port and data are kept for Start or Restart.
// Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	if s.external {
		return ErrExternal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Restart is Stop followed by Start: the same port, the same data.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}

// Close stops the server and removes its directory. It is idempotent, and
// does nothing for an external server.
func (s *Server) Close() error {
	if s.external {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stopLocked()
	if s.ownDir {
		if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// spawn launches the JVM without waiting for readiness. Called with s.mu
// held.
func (s *Server) spawn() error {
	logf, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	fmt.Fprintf(logf, startMarker+"%s on %s at %s ===\n", s.mainClass, s.Addr(), time.Now().Format(time.RFC3339Nano))

	args := []string{
		"-Xmx" + strconv.Itoa(s.cfg.heapMB) + "m",
		"-Xms16m",
		"-Xss512k",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-XX:-UsePerfData",
		"-XX:+ExitOnOutOfMemoryError",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	}
	if s.cfg.quorumFaults && !s.standalone {
		args = append(args, "-Dzookeeper.fastleader.maxNotificationInterval="+strconv.FormatInt(rejoinInterval(s.cfg.tick).Milliseconds(), 10))
	}
	if !s.standalone && s.mainClass == quorumMain {
		// A leader brings a learner that rejoins up to date with a
		// snapshot, not with a diff of its transaction log: ZooKeeper
		// 3.8.0's diff sync loses or misapplies transactions when servers
		// are killed and restarted under load (a server kept nodes the
		// leader had deleted, and logged "First digest mismatch"; see
		// docs/reliability.md), which no client can make up for. Later
		// releases fixed it (ZOOKEEPER-4394, -4643, -4646, -4785); this is
		// the path diff sync skipped.
		args = append(args, "-Dzookeeper.forceSnapshotSync=true")
	}
	if s.cfg.reconfig && s.mainClass == quorumMain {
		args = append(args, superDigestArg())
	}
	args = append(args, s.cfg.jvmArgs...)
	args = append(args, "-cp", s.inst.classpath, s.mainClass, s.configPath())

	cmd := exec.Command(s.inst.java, args...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := StartCommand(cmd); err != nil {
		return fmt.Errorf("zktest: starting java: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	pid := int64(cmd.Process.Pid)
	s.proc = p
	s.pid.Store(pid)
	go func() {
		p.err = cmd.Wait()
		s.pid.CompareAndSwap(pid, 0)
		close(p.done)
	}()
	return nil
}

// stopLocked kills the process by PID and reaps it. Called with s.mu held.
func (s *Server) stopLocked() error {
	p := s.proc
	if p == nil {
		return nil
	}
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("zktest: killing pid %d: %w", pid, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		return fmt.Errorf("zktest: pid %d still running %v after SIGKILL", pid, stopTimeout)
	}
	s.proc = nil
	s.pid.Store(0)
	return nil
}

// waitReady polls until the server answers ruok (and, standalone, serves)
// or the deadline passes. Called with s.mu held.
func (s *Server) waitReady(deadline time.Time) error {
	var last string
	for {
		select {
		case <-s.proc.done:
			return fmt.Errorf("zktest: server %s (pid %d) exited during start-up (%v); log %s:\n%s",
				s.Addr(), s.proc.cmd.Process.Pid, s.proc.err, s.LogPath(), s.LogTail(30))
		default:
		}
		ok, status := s.ready()
		if ok {
			return nil
		}
		last = status
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: server %s (pid %d) not ready after %v (last status: %s); log %s:\n%s",
				s.Addr(), s.proc.cmd.Process.Pid, s.cfg.startTimeout, last, s.LogPath(), s.LogTail(30))
		}
		select {
		case <-s.proc.done:
		case <-time.After(pollInterval):
		}
	}
}

// ready asks the server whether it is up; the string describes the answer.
func (s *Server) ready() (bool, string) {
	out, err := FourLetter(s.Addr(), "ruok", time.Second)
	if err != nil {
		return false, "ruok: " + err.Error()
	}
	if out != "imok" {
		return false, fmt.Sprintf("ruok answered %q", out)
	}
	if !s.standalone {
		return true, "imok"
	}
	mode, err := Mode(s.Addr(), time.Second)
	if err != nil {
		return false, "srvr: " + err.Error()
	}
	if mode == "standalone" && !s.tlsReady() {
		return false, "TLS client port " + s.TLSAddr() + " not open"
	}
	return mode == "standalone", "mode " + mode
}

// portClash reports whether the log of the latest run shows that a port
// was already taken.
func (s *Server) portClash() bool {
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return false
	}
	if i := bytes.LastIndex(b, []byte(startMarker)); i >= 0 {
		b = b[i:]
	}
	return bytes.Contains(b, []byte("Address already in use"))
}

// freePorts returns n distinct ports that were free on 127.0.0.1. All
// listeners are held until every port is chosen, so the ports differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	lo, hi := quietPorts()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 50*n {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo)))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: try another
			}
			return nil, fmt.Errorf("zktest: finding a free port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// quietPorts returns a range of ports outside the kernel's ephemeral range,
// where free ports are picked: a port the kernel may hand out as the local
// end of any outgoing connection can be taken between the moment it is
// found free and the moment a server binds it — and an ensemble member
// binds its quorum port only once it leads, long after the start (seen:
// "Leader failed to initialize any of the following sockets", and no
// quorum for a minute). Empty (lo == hi) when the range is unknown.
func quietPorts() (lo, hi int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, 0
	}
	eph, err := strconv.Atoi(f[0])
	if err != nil || eph <= 12000 {
		return 0, 0
	}
	return 10000, eph
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		if _, err := f.Seek(st.Size()-max, io.SeekStart); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
