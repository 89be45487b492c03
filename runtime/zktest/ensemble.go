package zktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ensemble is a replicated ZooKeeper of n local servers (QuorumPeerMain),
// each listening on 127.0.0.1 with ports of its own. With WithQuorumFaults,
// the servers reach each other through relays that Partition can cut.
//
// Methods are safe for concurrent use.
type Ensemble struct {
	dir  string
	cfg  config
	inst install

	mu      sync.Mutex
	members []*Server // by index; Join appends
	peers   []peer    // each member's quorum ports, by index
	left    []bool    // members removed by Leave, by index

	reconfigMu sync.Mutex // one Join or Leave at a time
	links      [][]*link  // links[i][j]: member i's way to member j; nil without WithQuorumFaults
	group      []int      // the partition group of each member; nil when healed

	closeOnce sync.Once
	closeErr  error
}

// link is the pair of relays through which one member reaches another.
type link struct {
	quorum, election *relay
}

// StartEnsemble starts an ensemble of n servers for the test and registers a
// cleanup that kills every process by PID and removes their directories. It
// returns once every server answers ruok and the quorum serves: one leader,
// the rest followers.
//
// An ensemble always runs local processes: EnvServers does not apply. A
// missing installation skips the test (fails it when CI is true), except
// that with EnvServers set it is always a skip.
func StartEnsemble(tb testing.TB, n int, opts ...Option) *Ensemble {
	tb.Helper()
	e, err := StartEnsembleProcess(n, opts...)
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && len(externalServers()) > 0 {
			tb.Skip(err.Error() + " (an ensemble needs local processes; " + EnvServers + " is set)")
		}
		handleStartErr(tb, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for i, m := range e.all() {
				tb.Logf("zktest: log tail of ensemble server %d %s (%s):\n%s", i, m.Addr(), m.LogPath(), m.LogTail(25))
			}
			if d := e.diverged(); len(d) > 0 {
				tb.Logf("zktest: ZOOKEEPER DIVERGED: a server's state was not the leader's (its own log says so), so this failure may be ZooKeeper's:\n%s", strings.Join(d, "\n"))
			}
		}
		if err := e.Close(); err != nil {
			tb.Errorf("zktest: %v", err)
		}
	})
	return e
}

// StartEnsembleProcess is StartEnsemble without a testing.TB, for TestMain.
// The caller must Close the ensemble.
func StartEnsembleProcess(n int, opts ...Option) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zktest: ensemble size %d < 1", n)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.tls != nil {
		return nil, errors.New("zktest: WithTLS is for a standalone server (Start, StartProcess), not an ensemble")
	}
	if cfg.reconfig && cfg.quorumFaults {
		return nil, errors.New("zktest: WithReconfig and WithQuorumFaults exclude each other (see WithQuorumFaults)")
	}
	inst, err := findInstall()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "zktest-ensemble-")
	if err != nil {
		return nil, err
	}
	e := &Ensemble{dir: dir, cfg: cfg, inst: inst}
	for i := 0; i < n; i++ {
		e.members = append(e.members, e.newMember(i, n == 1 && !cfg.reconfig))
	}
	e.peers = make([]peer, n)
	e.left = make([]bool, n)
	for attempt := 1; ; attempt++ {
		err := e.start()
		if err == nil {
			return e, nil
		}
		clash := false
		for _, m := range e.members {
			_ = m.Stop()
			clash = clash || m.portClash()
		}
		if attempt < bindAttempts && clash {
			continue
		}
		_ = e.Close()
		return nil, err
	}
}

// newMember returns the Server of member i (myid i+1), not yet
// configured.
func (e *Ensemble) newMember(i int, standalone bool) *Server {
	return &Server{
		cfg:        e.cfg,
		inst:       e.inst,
		dir:        filepath.Join(e.dir, "server"+strconv.Itoa(i+1)),
		mainClass:  quorumMain,
		standalone: standalone,
	}
}

// start configures every member on fresh ports, launches them all, and
// waits for the quorum.
func (e *Ensemble) start() error {
	n := len(e.members)
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	quorumPort := func(i int) int { return ports[3*i+1] }
	electionPort := func(i int) int { return ports[3*i+2] }
	if e.cfg.quorumFaults {
		if err := e.openLinks(quorumPort, electionPort); err != nil {
			return err
		}
	}
	for i := range e.members {
		e.peers[i] = peer{client: ports[3*i], quorum: quorumPort(i), election: electionPort(i)}
	}
	for i, m := range e.members {
		// Each member lists itself with its real ports, which it binds, and
		// the others as it reaches them: through its links, if it has any.
		quorum := e.quorumLines()
		for j := 0; j < n; j++ {
			p := e.peers[j]
			if l := e.link(i, j); l != nil {
				p.quorum, p.election = l.quorum.port(), l.election.port()
			}
			quorum = append(quorum, e.serverLine(j, p))
		}
		if err := configure(i, m, e.peers[i], quorum); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(e.cfg.startTimeout)
	// Launch all first: a member cannot finish electing without the others.
	for _, m := range e.members {
		m.mu.Lock()
		err := m.spawn()
		m.mu.Unlock()
		if err != nil {
			return err
		}
	}
	for _, m := range e.members {
		m.mu.Lock()
		err := m.waitReady(deadline)
		m.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if _, err := e.WaitQuorum(time.Until(deadline)); err != nil {
		return e.withLogTails(err)
	}
	return nil
}

// withLogTails returns err with the end of each member's log.
func (e *Ensemble) withLogTails(err error) error {
	var b strings.Builder
	b.WriteString(err.Error())
	for i, m := range e.all() {
		fmt.Fprintf(&b, "\n--- server %d %s log tail (%s):\n%s", i, m.Addr(), m.LogPath(), m.LogTail(15))
	}
	return errors.New(b.String())
}

// quorumLines returns the zoo.cfg lines every member has besides its
// server lines.
func (e *Ensemble) quorumLines() []string {
	ticks := func(d time.Duration) string {
		return strconv.FormatInt(int64((d+e.cfg.tick-1)/e.cfg.tick), 10)
	}
	lines := []string{
		"initLimit=" + ticks(10*time.Second),
		"syncLimit=" + ticks(5*time.Second),
	}
	return append(lines, e.cfg.reconfigLines()...)
}

// configure writes member i's myid and zoo.cfg, with p's client port and
// quorum as its ensemble lines.
func configure(i int, m *Server, p peer, quorum []string) error {
	m.setPort(p.client)
	if err := os.MkdirAll(m.DataDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.DataDir(), "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
		return err
	}
	return m.writeConfig(quorum)
}

// all returns every member ever started, by index.
func (e *Ensemble) all() []*Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.members)
}

// current returns every member, by index, with nil for those that left.
func (e *Ensemble) current() []*Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Clone(e.members)
	for i := range out {
		if e.left[i] {
			out[i] = nil
		}
	}
	return out
}

// Size returns the number of servers started, those that left the
// ensemble (Leave) included: member indexes run from 0 to Size()-1.
func (e *Ensemble) Size() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.members)
}

// Servers returns the client address of every member, in member order, to
// pass to a ZooKeeper client. Members that left (Leave) are not listed.
func (e *Ensemble) Servers() []string {
	var out []string
	for _, m := range e.current() {
		if m != nil {
			out = append(out, m.Addr())
		}
	}
	return out
}

// Server returns member i (0-based). Its Stop, Start and Restart control
// that one process; its Start waits only for ruok, since whether it serves
// depends on the others (use WaitQuorum).
func (e *Ensemble) Server(i int) *Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.members[i]
}

// Leader returns the index of the member whose srvr answer says "Mode:
// leader" (or "standalone" in an ensemble of one), or -1 if none does right
// now.
func (e *Ensemble) Leader() int {
	for i, m := range e.current() {
		if m == nil || m.PID() == 0 {
			continue
		}
		mode, err := Mode(m.Addr(), time.Second)
		if err == nil && (mode == "leader" || mode == "standalone") {
			return i
		}
	}
	return -1
}

// WaitQuorum polls until every running member serves, exactly one of them
// as leader, and the running members are a majority. It returns the
// leader's index, or an error describing each member's state at the
// deadline.
//
// While a partition is in force (Partition, Isolate), only the members of
// the group holding a majority must serve, one of them as leader and enough
// of them running to be a majority of the ensemble, and every running
// member of another group must answer that it is not serving
// (ErrNotServing): WaitQuorum returns once the ensemble has settled into the
// partition. If no group holds a majority, no quorum can form and
// WaitQuorum fails at once.
func (e *Ensemble) WaitQuorum(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		group := e.partition()
		majority := majorityGroup(group)
		if majority < 0 {
			return -1, fmt.Errorf("zktest: no group of the partition %v holds a majority of the ensemble", group)
		}
		leader, status, ok := e.quorumStatus(group, majority)
		if ok {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("zktest: ensemble has no serving quorum after %v: %s", timeout, status)
		}
		time.Sleep(pollInterval) // polling a remote state; there is nothing to wait on
	}
}

// quorumStatus reports whether the members of the majority group serve with
// one leader and the others do not serve.
func (e *Ensemble) quorumStatus(group []int, majority int) (leader int, status string, ok bool) {
	leader = -1
	leaders, running, members := 0, 0, 0
	ok = true
	var parts []string
	for i, m := range e.current() {
		if m == nil {
			parts = append(parts, fmt.Sprintf("%d:left", i))
			continue
		}
		members++
		if m.PID() == 0 {
			parts = append(parts, fmt.Sprintf("%d:stopped", i))
			continue
		}
		mode, err := Mode(m.Addr(), time.Second)
		if i < len(group) && group[i] != majority { // a member that joined since is in no partition
			switch {
			case errors.Is(err, ErrNotServing):
				parts = append(parts, fmt.Sprintf("%d:cut off, not serving", i))
			case err == nil:
				parts = append(parts, fmt.Sprintf("%d:cut off, yet %s", i, mode))
				ok = false
			default:
				parts = append(parts, fmt.Sprintf("%d:cut off, %v", i, err))
				ok = false
			}
			continue
		}
		running++
		if err != nil {
			parts = append(parts, fmt.Sprintf("%d:%v", i, err))
			ok = false
			continue
		}
		parts = append(parts, fmt.Sprintf("%d:%s", i, mode))
		switch mode {
		case "leader", "standalone":
			leaders++
			leader = i
		case "follower", "observer":
		default:
			ok = false
		}
	}
	ok = ok && leaders == 1 && running > members/2
	return leader, strings.Join(parts, " "), ok
}

// RollingRestart restarts every running member once, one at a time:
// followers first, in index order, then the leader. Each restart is
// Server.Restart (a kill and a start on the same ports with the same data).
// Before the next one, RollingRestart waits up to timeout for WaitQuorum,
// which, with no partition in force, means that every running member
// serves again, the restarted one included; a member serves only once it
// has synchronised with the leader. Stopped members stay stopped.
//
// It returns the index of the leader at the end. A session whose timeout
// outlasts one restart and one leader election survives, as long as its
// client knows more than one member.
func (e *Ensemble) RollingRestart(timeout time.Duration) (int, error) {
	leader, err := e.WaitQuorum(timeout)
	if err != nil {
		return -1, fmt.Errorf("zktest: rolling restart: before it: %w", err)
	}
	var order []int
	for i, m := range e.current() {
		if i != leader && m != nil && m.Running() {
			order = append(order, i)
		}
	}
	order = append(order, leader)
	for _, i := range order {
		if err := e.Server(i).Restart(); err != nil {
			return -1, fmt.Errorf("zktest: rolling restart: member %d: %w", i, err)
		}
		if leader, err = e.WaitQuorum(timeout); err != nil {
			return -1, fmt.Errorf("zktest: rolling restart: after restarting member %d: %w", i, err)
		}
	}
	return leader, nil
}

// Close kills every member by PID, stops the relays and removes the
// ensemble's directory. It is idempotent.
func (e *Ensemble) Close() error {
	e.closeOnce.Do(func() {
		var errs []error
		for _, m := range e.all() {
			errs = append(errs, m.Close())
		}
		e.closeLinks()
		errs = append(errs, os.RemoveAll(e.dir))
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}
