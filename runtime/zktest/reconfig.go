package zktest

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// An ensemble started WithReconfig changes its membership the way an
// operator replaces servers one at a time with ZooKeeper 3.5+'s dynamic
// reconfiguration: Join starts a server and adds it with a reconfig
// request, Remove removes one with a reconfig request, Leave removes one
// and stops it. The harness sends
// those requests as a superuser of its own (digest superUser), so the
// servers' ACLs stay in force for the test's clients.

// superUser is the digest identity ("user:password") the harness
// authenticates as to reconfigure an ensemble.
const superUser = "zktest-super:zktest-super"

// configNode is where ZooKeeper publishes its dynamic configuration.
const configNode = "/zookeeper/config"

// WithReconfig makes StartEnsemble start an ensemble whose membership can
// change while it runs (ZooKeeper's dynamic reconfiguration): each zoo.cfg
// has reconfigEnabled=true and standaloneEnabled=false, and lists every
// server with its client address ("server.N=127.0.0.1:quorum:election:
// participant;127.0.0.1:client"), so that /zookeeper/config tells clients
// where each server serves them. Ensemble.Join adds a server,
// Ensemble.Remove and Ensemble.Leave remove one. The servers accept the harness's superuser besides the
// usual clients. It excludes WithQuorumFaults; Start and StartProcess
// ignore it.
func WithReconfig() Option {
	return func(c *config) { c.reconfig = true }
}

// peer is a member's ports.
type peer struct{ client, quorum, election int }

// serverLine returns member i's "server.N=" line for zoo.cfg and for
// reconfig requests, with p's ports.
func (e *Ensemble) serverLine(i int, p peer) string {
	line := fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, p.quorum, p.election)
	if e.cfg.reconfig {
		line += fmt.Sprintf(":participant;127.0.0.1:%d", p.client)
	}
	return line
}

// reconfigLines returns the zoo.cfg lines WithReconfig adds.
func (c config) reconfigLines() []string {
	if !c.reconfig {
		return nil
	}
	return []string{"reconfigEnabled=true", "standaloneEnabled=false"}
}

// superDigestArg returns the JVM argument that makes superUser the
// server's superuser: ZooKeeper's digest of it, base64(sha1(user:password)).
func superDigestArg() string {
	user, _, _ := strings.Cut(superUser, ":")
	sum := sha1.Sum([]byte(superUser))
	return "-Dzookeeper.DigestAuthenticationProvider.superDigest=" + user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Join starts a new server and adds it to the ensemble, as an operator
// adds a replacement: the server starts with the current members and
// itself in its configuration, and once it has synchronised with the
// leader an incremental reconfig adds it as a participant. Join returns
// the new member's index once the reconfiguration is committed and the
// ensemble serves with the new member (WaitQuorum). Each wait is bounded
// by the start timeout (WithStartTimeout). On failure the new server is
// stopped and the ensemble is as it was, unless the reconfiguration was
// committed. Join needs WithReconfig; Join, Remove and Leave run one at a
// time.
func (e *Ensemble) Join() (int, error) {
	if !e.cfg.reconfig {
		return -1, errors.New("zktest: Join needs an ensemble started WithReconfig")
	}
	e.reconfigMu.Lock()
	defer e.reconfigMu.Unlock()
	i := e.Size()
	m, p, err := e.startJoiner(i)
	if err != nil {
		return -1, err
	}
	if err := e.reconfigure(i, true, e.serverLine(i, p)); err != nil {
		_ = m.Close()
		return -1, e.withLogTails(fmt.Errorf("zktest: adding member %d: %w", i, err))
	}
	e.mu.Lock()
	e.members = append(e.members, m)
	e.peers = append(e.peers, p)
	e.left = append(e.left, false)
	e.mu.Unlock()
	if _, err := e.WaitQuorum(e.cfg.startTimeout); err != nil {
		return i, fmt.Errorf("zktest: after adding member %d: %w", i, err)
	}
	return i, nil
}

// startJoiner starts member i on fresh ports, configured with the current
// members and itself, and waits until it follows the leader.
func (e *Ensemble) startJoiner(i int) (*Server, peer, error) {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(3)
		if err != nil {
			return nil, peer{}, err
		}
		p := peer{client: ports[0], quorum: ports[1], election: ports[2]}
		m := e.newMember(i, false)
		quorum := e.quorumLines()
		e.mu.Lock()
		for j := range e.members {
			if !e.left[j] {
				quorum = append(quorum, e.serverLine(j, e.peers[j]))
			}
		}
		e.mu.Unlock()
		quorum = append(quorum, e.serverLine(i, p))
		if err := configure(i, m, p, quorum); err != nil {
			return nil, peer{}, err
		}
		err = m.Start()
		if err == nil {
			err = awaitFollowing(m, time.Now().Add(e.cfg.startTimeout))
		}
		if err == nil {
			return m, p, nil
		}
		clash := m.portClash()
		_ = m.Close()
		if attempt >= bindAttempts || !clash {
			return nil, peer{}, err
		}
	}
}

// awaitFollowing polls until m serves as a follower (or observer), which
// it does once it has synchronised with the leader.
func awaitFollowing(m *Server, deadline time.Time) error {
	for {
		mode, err := Mode(m.Addr(), time.Second)
		if err == nil && (mode == "follower" || mode == "observer") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: joining server %s does not follow the leader (mode %q, %v); log %s:\n%s",
				m.Addr(), mode, err, m.LogPath(), m.LogTail(30))
		}
		time.Sleep(pollInterval) // polling a remote state; there is nothing to wait on
	}
}

// Leave removes member i from the ensemble, as an operator retires a
// server: Remove, then its process is killed by PID. Leave returns once
// the remaining members serve (WaitQuorum). Clients connected to it lose
// their connection when it is killed, if not before. Leave needs
// WithReconfig; Join, Remove and Leave run one at a time.
func (e *Ensemble) Leave(i int) error {
	if err := e.Remove(i); err != nil {
		return err
	}
	if err := e.Server(i).Stop(); err != nil {
		return err
	}
	if _, err := e.WaitQuorum(e.cfg.startTimeout); err != nil {
		return fmt.Errorf("zktest: after removing member %d: %w", i, err)
	}
	return nil
}

// Remove removes member i from the ensemble's configuration and leaves
// its process running: an incremental reconfig removes it, and a write
// committed after it puts the new configuration in force. ZooKeeper does
// not stop a removed server: it goes on serving the clients connected to
// it, as a non-voting follower, until it is stopped (Server(i).Stop, or
// the ensemble's Close). From then on the member counts as gone: Servers
// and WaitQuorum leave it out. Each wait is bounded by the start timeout.
// Remove needs WithReconfig; Join, Remove and Leave run one at a time.
func (e *Ensemble) Remove(i int) error {
	if !e.cfg.reconfig {
		return errors.New("zktest: Remove needs an ensemble started WithReconfig")
	}
	e.reconfigMu.Lock()
	defer e.reconfigMu.Unlock()
	e.mu.Lock()
	gone := i < 0 || i >= len(e.members) || e.left[i]
	e.mu.Unlock()
	if gone {
		return fmt.Errorf("zktest: %d is not a member", i)
	}
	if err := e.reconfigure(i, false, strconv.Itoa(i+1)); err != nil {
		return e.withLogTails(fmt.Errorf("zktest: removing member %d: %w", i, err))
	}
	e.mu.Lock()
	e.left[i] = true
	e.mu.Unlock()
	return nil
}

// reconfigure sends an incremental reconfig that adds (join) or removes
// member i, spec being its server line or id, until the configuration
// the ensemble publishes has it (or has it no more), then commits a write.
// A request whose reply was lost is not sent again blindly: the
// configuration read first says whether it took effect.
func (e *Ensemble) reconfigure(i int, join bool, spec string) error {
	conn, err := e.admin()
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(e.cfg.startTimeout)
	prefix := fmt.Sprintf("server.%d=", i+1)
	for {
		data, _, err := conn.Get(configNode)
		if err == nil && strings.Contains(string(data), prefix) == join {
			return commitWrite(conn, deadline)
		}
		if err == nil {
			if join {
				_, err = conn.IncrementalReconfig([]string{spec}, nil, -1)
			} else {
				_, err = conn.IncrementalReconfig(nil, []string{spec}, -1)
			}
			if err == nil {
				return commitWrite(conn, deadline)
			}
		}
		switch {
		case errors.Is(err, zk.ErrBadArguments), errors.Is(err, zk.ErrReconfigDisabled), errors.Is(err, zk.ErrNoAuth):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("still failing after %v: %w", e.cfg.startTimeout, err)
		}
		// No quorum of the new configuration yet, another reconfiguration
		// in progress, a leader hand-off: read the configuration again.
		time.Sleep(pollInterval)
	}
}

// commitWrite creates an ephemeral node through conn, trying again until
// deadline while the connection is lost (a leader that left hands off to
// another), and deletes it: once a write ordered after a reconfiguration
// has committed, the new configuration is in force (ZooKeeper's
// reconfiguration guide). A create tried again may leave a node behind
// until conn closes.
func commitWrite(conn *zk.Conn, deadline time.Time) error {
	for {
		p, err := conn.Create("/zktest-reconfig-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err == nil {
			_ = conn.Delete(p, -1) // else it goes with conn
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: write after the reconfiguration: %w", err)
		}
		time.Sleep(pollInterval) // until a leader serves again
	}
}

// admin connects to the current members as the superuser.
func (e *Ensemble) admin() (*zk.Conn, error) {
	conn, _, err := zk.Connect(e.Servers(), 10*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	if err := conn.AddAuth("digest", []byte(superUser)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("zktest: authenticating as the superuser: %w", err)
	}
	return conn, nil
}

// quietLogger drops go-zookeeper's log.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
