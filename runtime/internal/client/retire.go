package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkgen/zkgen/runtime/internal/wire"
)

// Supervise opens a session only once the previous one is over on the
// server (supervise.go). A session the server expired is over. One the
// client gave up on by its own clock, or closed while ZooKeeper could not
// hear it, lives on in the server with its ephemeral nodes (locks,
// memberships, candidacies) until the server expires it. Waiting out the
// timeout is not enough: a ZooKeeper server restarted from its log
// restores the sessions it had and grants each a full timeout again from
// its start, so a session can outlive any wait the client computes (issue
// 41: a worker listed twice as a partitioner member after kill -9 and a
// restart of a standalone server). So Supervise retires the old session
// instead: it connects to it again with its credentials and closes it, as
// its own client would. The server then deletes its ephemeral nodes
// before it answers; or it answers that the session has expired, and it
// has, nodes included. Either way the old nodes are gone before the new
// session begins.

// errCannotRetire reports that the previous session cannot be closed this
// way (no credentials, or a server answer that makes no sense for it):
// Supervise then waits out its timeout instead.
var errCannotRetire = errors.New("zookeeper: previous session cannot be closed")

// retireAttempt bounds one attempt to close the previous session on one
// server: the dial, the handshake and the close.
const retireAttempt = 5 * time.Second

// mustRetire reports whether prev may live on in the server: the client
// gave up on it by its own clock, or closed it (the close may not have
// reached the server). A session the server expired is over.
func mustRetire(prev *Session) bool {
	return prev.gaveUp.Load() || errors.Is(prev.Err(), ErrClosed)
}

// retire closes prev on the server, trying each address of servers and of
// the servers prev learned (resolved again) in turn. It returns nil once a
// server has closed it or said it has expired; errCannotRetire when that
// cannot be done; another error when no server could be reached.
func retire(ctx context.Context, servers []string, prev *Session) error {
	pw := prev.passwd.Load()
	if pw == nil {
		return errCannotRetire
	}
	// A session value for dialConn alone: prev's dialer, resolver and TLS,
	// servers resolved now (a server may have moved since prev began),
	// those prev learned from the ensemble's configuration included.
	r := &Session{log: prev.log, timeout: prev.timeout, dialer: prev.dialer, resolve: prev.resolve, tlsConf: prev.tlsConf,
		learned: prev.hosts.learnedServers()}
	r.hosts = newHostList(r)
	if err := r.hosts.Init(servers); err != nil {
		return err
	}
	var errs []error
	for range r.hosts.Len() {
		addr, _ := r.hosts.Next()
		err := closeOn(ctx, r, addr, prev.ID(), *pw)
		if err == nil || errors.Is(err, errCannotRetire) {
			return err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return JoinErrors(errs...)
}

// closeOn connects to the server at addr as session id (password pw) and
// closes it. It returns nil once the session is closed or the server said
// it has expired.
func closeOn(ctx context.Context, r *Session, addr string, id int64, pw []byte) error {
	c, err := dialConn(r, "tcp", addr, retireAttempt)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(retireAttempt)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	// lastZxid 0: a server behind the client still takes the request.
	if _, err := c.Write(wire.ConnectRequest(0, r.timeout, id, pw)); err != nil {
		return err
	}
	f, err := wire.ReadFrame(c, 1<<10)
	if err != nil {
		return err
	}
	h := wire.ParseConnectResponse(f)
	switch {
	case h.Timeout == 0:
		return nil // expired: over, its nodes with it
	case h.SessionID != id:
		return fmt.Errorf("%w: %s resumed session 0x%x as 0x%x", errCannotRetire, addr, id, h.SessionID)
	}
	const xid = 1
	if _, err := c.Write(wire.Request(xid, wire.OpCloseSession)); err != nil {
		return err
	}
	return awaitClosed(c, addr, xid)
}

// awaitClosed reads the server's frames on c until the reply to the close
// request xid.
func awaitClosed(c net.Conn, addr string, xid int32) error {
	const sessionExpired = -112 // ZooKeeper's SESSIONEXPIRED
	for {
		f, err := wire.ReadFrame(c, 1<<20)
		if err != nil {
			return err
		}
		got, code, ok := wire.ReplyHeader(f)
		switch {
		case !ok:
			return fmt.Errorf("%w: %s sent a %d-byte frame", errCannotRetire, addr, len(f))
		case got != xid:
			continue // a notification or a ping
		case code == 0 || code == sessionExpired:
			return nil
		}
		return fmt.Errorf("%w: %s answered the close with error %d", errCannotRetire, addr, code)
	}
}
