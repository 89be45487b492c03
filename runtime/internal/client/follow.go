package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// A session follows the ensemble's dynamic configuration (ensconfig.go):
// it reads /zookeeper/config when Connect establishes it, watches it, and
// makes the servers it lists the session's server list (hostList.adopt),
// so that servers added by a reconfiguration are used and removed ones are
// no longer tried (issue 42). A session connected to a server that a
// reconfiguration removed moves to a listed one: a removed server is not
// shut down by ZooKeeper, it goes on serving its clients as a non-voting
// follower until its operator stops it, and the configuration says it
// will.
//
// A configuration is taken only if it lists the address the session is
// connected to (once one has been taken, any later one is): a session
// that reaches its servers through addresses the configuration does not
// name — a proxy, a tunnel, a port forward, a load-balanced service
// address, a TLS port (the configuration names the plain ones) — keeps
// the servers it was given. So does a session whose ensemble publishes no
// client address (a 3.4 server, a standalone one, servers configured the
// pre-3.5 way, a node it may not read).

// configNode is where ZooKeeper publishes its dynamic configuration.
const configNode = "/zookeeper/config"

// moveJitter bounds the random wait before a session leaves a server the
// configuration no longer lists, so that the clients of a removed server
// do not all land on the others at once.
const moveJitter = time.Second

// WithEnsembleConfig sets whether the session follows the ensemble's
// dynamic configuration (ZooKeeper 3.5+, /zookeeper/config). Default true:
// the session reads the configuration when Connect establishes it and each
// time it changes, and from the first that lists the server it is connected
// to, its server list is the servers the configuration names, each at its
// client address: servers a reconfiguration adds are used, servers it
// removes are no longer tried, and a session on a removed server moves to
// another within a second of reading the configuration that removed it. A
// configuration that does not list the session's server (servers reached
// through a proxy, a tunnel or a TLS port), an empty one (a standalone
// server) and a missing or unreadable node (ZooKeeper 3.4, an ACL) leave
// the servers given to Connect in use. false keeps the servers given to
// Connect for the session's life. Reading the configuration costs Connect
// one request, and the lookup of the host names it names (bounded by a
// second).
func WithEnsembleConfig(follow bool) Option {
	return func(s *Session) { s.static = !follow }
}

// configFollower follows the configuration for one session.
type configFollower struct {
	s       *Session
	version int64 // of the configuration last looked at
	seen    bool  // a configuration was looked at
}

// followConfig reads the configuration on the Connect that has just
// established s (bounded by ctx; one attempt, so that Connect's requests
// are all done when it returns), and follows it on a goroutine of its own
// until s ends.
func followConfig(ctx context.Context, s *Session) {
	if s.static {
		return
	}
	f := &configFollower{s: s}
	r, err := Await(ctx, s, func() (Result, error) {
		d, st, w, err := s.conn.GetW(configNode)
		return Result{Data: d, Stat: st, Watch: w}, err
	})
	switch {
	case err == nil:
		f.apply(r.Data)
	case ctx.Err() != nil || IsRecoverable(err):
		r.Watch = nil // read it on the goroutine
	case f.stop(err):
		return
	}
	go f.run(r.Watch)
}

// run waits for the watch w to fire (none: read at once), reads the
// configuration again with a watch and takes it, until s ends or the
// configuration cannot be read.
func (f *configFollower) run(w <-chan zk.Event) {
	for {
		if w != nil {
			select {
			case <-w:
			case <-f.s.done:
				return
			}
		}
		r, err := f.read()
		if err != nil {
			f.stop(err)
			return
		}
		f.apply(r.Data)
		w = r.Watch
	}
}

// read syncs the session's server with the leader, as ZooKeeper's guide
// asks before reading a changed configuration, and reads it with a watch,
// retrying recoverable errors for as long as the session lives.
func (f *configFollower) read() (Result, error) {
	s := f.s
	var r Result
	err := OpsOf(s).RetryAlive(context.Background(), func() error {
		if _, err := AwaitOn(context.Background(), s, configNode, func() (string, error) { return s.conn.Sync(configNode) }); err != nil {
			return err
		}
		var err error
		r, err = Await(context.Background(), s, func() (Result, error) {
			d, st, w, err := s.conn.GetW(configNode)
			return Result{Data: d, Stat: st, Watch: w}, err
		})
		return err
	})
	return r, err
}

// stop logs why the configuration cannot be followed (err) and reports
// whether following must stop: always but for a recoverable error.
func (f *configFollower) stop(err error) bool {
	log := f.s.log
	switch {
	case f.s.Err() != nil:
	case errors.Is(err, zk.ErrNoNode):
		log.Debug("zookeeper publishes no ensemble configuration (before 3.5): the session keeps its servers")
	case errors.Is(err, zk.ErrNoAuth):
		log.Info("the ensemble configuration is not readable by this session: it keeps its servers", "node", configNode)
	case IsRecoverable(err):
		return false
	default:
		log.Warn("reading the ensemble configuration failed: the session keeps its servers", "err", err)
	}
	return true
}

// apply takes the configuration data: a newer one than the last looked
// at, that names client addresses, becomes the server list when hostList
// adopts it, and the session leaves its server when the list no longer
// has it.
func (f *configFollower) apply(data []byte) {
	s := f.s
	cfg, err := parseEnsembleConfig(data)
	switch {
	case err != nil:
		s.log.Warn("ensemble configuration not understood: the session keeps its servers", "err", err)
		return
	case f.seen && cfg.version <= f.version:
		return
	}
	f.seen, f.version = true, cfg.version
	if len(cfg.servers) == 0 {
		s.log.Debug("the ensemble configuration names no client address: the session keeps its servers")
		return
	}
	cur := ""
	if c := s.live.Load(); c != nil {
		cur = c.addr
	}
	switch s.hosts.adopt(cfg.servers, cur) {
	case adoptNotListed:
		s.log.Info("the ensemble configuration does not name the server the session is connected to: it keeps its servers",
			"server", cur, "configuration", cfg.servers)
	case adoptMove:
		s.log.Info("zookeeper servers from the ensemble configuration; the session's server left it",
			"version", fmt.Sprintf("%x", cfg.version), "servers", cfg.servers, "server", cur)
		f.leave(cur)
	case adoptStay:
		s.log.Info("zookeeper servers from the ensemble configuration",
			"version", fmt.Sprintf("%x", cfg.version), "servers", cfg.servers)
	}
}

// leave closes the session's connection to addr, after a random wait of
// up to moveJitter, if it is still connected there and the list still
// lacks addr; go-zookeeper then connects to a listed server.
func (f *configFollower) leave(addr string) {
	if !pause(context.Background(), time.Duration(f.s.rand.Int64N(int64(moveJitter))), f.s.done) {
		return
	}
	if c := f.s.live.Load(); c != nil && c.addr == addr && !f.s.hosts.lists(addr) {
		f.s.log.Info("moving the session off a server the ensemble configuration no longer names", "server", addr)
		c.Conn.Close()
	}
}
