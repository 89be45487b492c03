package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Session is one ZooKeeper session. Every handle is built from a session and
// shares its fate: when the session ends (Close, or expiry) every handle on it
// reports lost. A Session never opens a new ZooKeeper session by itself; after
// expiry the application connects again.
//
// A Session is safe for concurrent use.
type Session struct {
	conn    *zk.Conn
	log     *slog.Logger
	policy  RetryPolicy
	timeout time.Duration
	acl     []zk.ACL
	auth    []authInfo  // WithAuth credentials
	dialer  DialFunc    // WithDialer; nil: net.Dialer
	resolve ResolveFunc // WithResolver; nil: see newHostList
	tlsConf *tls.Config // WithTLS; nil: plain
	hosts   *hostList   // go-zookeeper's host provider
	static  bool        // WithEnsembleConfig(false)
	learned []string    // servers an earlier session learned (withLearned)
	rand    *Rand       // WithRandomSeed; nil: the system's randomness

	done     chan struct{}
	doneOnce sync.Once
	dials    atomic.Int64             // connections dialled: a change means another server may answer
	live     atomic.Pointer[liveConn] // the connection dialled last
	err      atomic.Pointer[error]    // why done is closed
	ended    atomic.Bool              // set before done closes; checked by the dialer

	pipe   pipeStats   // pipelined create-and-list outcomes (pipeline.go)
	sends  sentWaits   // listings waiting for their create to be written (pipeline.go)
	frames frameSignal // who waits for a frame to be written (order.go)

	// go-zookeeper's reconnect race (zxid.go)
	lastZxid atomic.Int64 // greatest zxid seen in a reply

	// Requests of the session's own, and the event callbacks (inject.go)
	injectN atomic.Int64 // requests of the session's own written
	listen  listeners    // Ops.Listen's callbacks

	// Supervise (supervise.go)
	tenures sync.WaitGroup         // live tenures (Track)
	gaveUp  atomic.Bool            // ended by the session's own clock, not by the server
	passwd  atomic.Pointer[[]byte] // the session's password, from the server's ConnectResponse (retire)

	onSupervised func(SessionEvent) // WithSessionEvents
	readOnly     bool               // WithReadOnly

	telCfg  TelemetryConfig // WithMeterProvider, WithTracerProvider
	metrics *sessionMetrics // nil: no meter provider (session_telemetry.go)

	hooks  hooks    // what handles registered for the session's close and end (hooks.go)
	shared sync.Map // what handles of one resource share (sessionShared)

	lastRecv   atomic.Int64 // unix nanos of the last bytes from the server
	answeredAt atomic.Int64 // monoNow when the latest request answered was sent (liveness.go)
	negotiated atomic.Int64 // session timeout granted by the server

	mu          sync.Mutex
	id          int64       // session id once established
	expiryTimer *time.Timer // runs while disconnected
	giveUpAt    time.Time   // when expiryTimer fires (zero: it is not set)
	established chan struct{}
	estOnce     sync.Once
}

// Connect opens a ZooKeeper session to one of servers ("host:port") and
// blocks until the session is established or ctx ends (then it gives up and
// returns ctx's error; nothing is left behind).
func Connect(ctx context.Context, servers []string, opts ...Option) (*Session, error) {
	if len(servers) == 0 {
		return nil, errors.New("runtime: Connect: no servers given")
	}
	s := &Session{
		log:         slog.Default(),
		policy:      DefaultRetry,
		timeout:     10 * time.Second,
		acl:         zk.WorldACL(zk.PermAll),
		done:        make(chan struct{}),
		established: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.hosts = newHostList(s)
	var terr error
	if s.metrics, terr = newSessionMetrics(s.telCfg); terr != nil {
		s.log.Warn("some telemetry instruments could not be created; they record nothing", "err", terr)
	}
	conn, _, err := zk.Connect(servers, s.timeout,
		zk.WithLogger(zkLogger{s.log}),
		zk.WithEventCallback(s.onEvent),
		zk.WithHostProvider(s.hosts),
		zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			return dial(s, network, addr, timeout)
		}),
		zk.WithLogInfo(false),
	)
	if err != nil {
		return nil, fmt.Errorf("runtime: Connect: %w", err)
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	select {
	case <-s.established:
		s.mu.Lock()
		s.id = conn.SessionID()
		id := s.id
		s.mu.Unlock()
		s.log.Debug("zookeeper session established", "session", fmt.Sprintf("0x%x", id), "server", conn.Server())
		if err := OpsOf(s).addAuth(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("runtime: Connect: %w", err)
		}
		followConfig(ctx, s)
		return s, nil
	case <-s.done:
		conn.Close()
		return nil, fmt.Errorf("runtime: Connect: %w", s.Err())
	case <-ctx.Done():
		// go-zookeeper's Close waits out its reconnect back-off; do it in
		// the background so Connect returns when ctx says. The dialer
		// refuses to connect once the session has ended.
		s.end(ErrClosed)
		go conn.Close()
		return nil, fmt.Errorf("runtime: Connect to %v: %w", servers, ctx.Err())
	}
}

// dial is go-zookeeper's dialer: it connects to a server (over WithDialer's
// dialer and WithTLS's TLS, see dialConn), through a liveConn that sees the
// plaintext, for as long as the session is not over.
func dial(s *Session, network, addr string, timeout time.Duration) (net.Conn, error) {
	if s.ended.Load() || s.pastGiveUp() {
		// Never reconnect once the session is over: go-zookeeper would
		// otherwise silently open a new session.
		return nil, errors.New("runtime: session ended")
	}
	c, err := dialConn(s, network, addr, timeout)
	if err != nil {
		return nil, err
	}
	s.dials.Add(1)
	lc := &liveConn{Conn: c, s: s, addr: addr}
	lc.zxid = newZxidGuard(s, lc)
	s.live.Store(lc)
	return lc, nil
}

// onEvent runs on go-zookeeper's event loop; it must not block.
func (s *Session) onEvent(ev zk.Event) {
	s.listen.tell(ev)
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		s.mu.Lock()
		if s.conn != nil {
			s.id = s.conn.SessionID()
		}
		if s.expiryTimer != nil {
			s.expiryTimer.Stop()
			s.expiryTimer, s.giveUpAt = nil, time.Time{}
		}
		s.mu.Unlock()
		s.estOnce.Do(func() { close(s.established) })
	case zk.StateDisconnected:
		s.disconnected()
	case zk.StateExpired:
		s.log.Warn("zookeeper session expired")
		s.expire()
	case zk.StateAuthFailed:
		s.log.Error("zookeeper authentication failed")
		s.expire()
	}
}

// disconnected starts the session's clock when its connection is lost
// (see lostFraction): it gives up when the give-up point comes, or at once
// when it has passed. At once means here, on go-zookeeper's loop, before
// the loop dials again (it does without a pause after a lost connection):
// on a timer's goroutine the give-up would race that dial, which then
// opens a connection in some runs and not in others.
func (s *Session) disconnected() {
	s.mu.Lock()
	if s.expiryTimer != nil || s.id == 0 || s.ended.Load() {
		s.mu.Unlock()
		return
	}
	d := giveUpIn(s)
	s.log.Warn("zookeeper connection lost; session kept while reconnecting", "give_up_in", d)
	s.metrics.connectionLost()
	if d > 0 {
		s.expiryTimer, s.giveUpAt = time.AfterFunc(d, s.giveUp), time.Now().Add(d)
	}
	s.mu.Unlock()
	if d == 0 {
		s.giveUp()
	}
}

// pastGiveUp reports whether the give-up point of a lost connection has
// come, whether or not its timer's goroutine has run yet: a dial at that
// instant (go-zookeeper's back-off ends a second after the loss, as a
// give-up point of a 2.9 s session timeout does) is refused, as it would
// be once giveUp ran. Otherwise the dial went out or not as Go ran the two,
// and in some runs reconnected the session and closed it on the server
// (ensemble-service seed=979364566: 6 histories in 10).
func (s *Session) pastGiveUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.giveUpAt.IsZero() && !time.Now().Before(s.giveUpAt)
}

// giveUp ends the session by its own clock: unreachable past the give-up
// point.
func (s *Session) giveUp() {
	s.log.Warn("zookeeper unreachable past the give-up point (35% of the session timeout): session treated as expired")
	s.gaveUp.Store(true)
	s.expire()
}

func (s *Session) expire() {
	if s.end(ErrSessionExpired) {
		// Close on another goroutine: we may be on go-zookeeper's loop, and
		// Close waits for it. The dialer refuses to reconnect meanwhile.
		// (Before Connect has the conn, Connect closes it itself.)
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		if conn != nil {
			go conn.Close()
		}
	}
}

// end marks the session over with reason err; it reports whether this call
// ended it. An expiry is counted before Done is closed, so that whoever
// saw Done sees the count.
func (s *Session) end(err error) bool {
	first := false
	s.doneOnce.Do(func() {
		first = true
		s.err.Store(&err)
		s.mu.Lock()
		s.ended.Store(true) // under mu: see trackHold
		if s.expiryTimer != nil {
			s.expiryTimer.Stop()
			s.expiryTimer, s.giveUpAt = nil, time.Time{}
		}
		s.mu.Unlock()
		if errors.Is(err, ErrSessionExpired) {
			s.metrics.expired(s.gaveUp.Load())
		}
		close(s.done)
		s.hooks.runEnd()
	})
	return first
}

// Close ends the session: ZooKeeper deletes its ephemeral nodes at once, and
// every handle built on it reports lost.
//
// First, while the session is alive, it runs what handles registered
// with OnClose, and once its end is told it waits for their channels,
// before it closes the session on the server. So a partitioner member
// reports its partitions released before the next owner can take them:
// it calls its releasing hook for each (WithPartitionHooks) and waits
// until every Owned stream has handed its reader a set without them, as
// Leave does; and queue handles with a prefetch give their buffered items
// back (WithPrefetch). All of it is bounded: 5s in all. If the bound runs
// out first (a hook that does not return, a reader still busy), Close
// closes the session all the same and returns an error saying which
// partitions were not handed over: their readers may still be working
// when the next owner starts.
//
// Close is idempotent; it returns nil when nothing was left undone.
func (s *Session) Close() error {
	var err error
	deadline := time.Now().Add(CloseBound)
	if s.Err() == nil {
		err = s.hooks.runClose(deadline)
	}
	if s.end(ErrClosed) {
		s.hooks.waitClose(deadline)
		s.conn.Close()
	}
	if err != nil {
		return fmt.Errorf("runtime: Close: %w", err)
	}
	return nil
}

// Done returns a channel closed when the session ends, by Close or expiry.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session is alive, then ErrClosed or
// ErrSessionExpired.
func (s *Session) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// ID returns the ZooKeeper session id.
func (s *Session) ID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Conn returns the underlying go-zookeeper connection, for operations the
// runtime does not wrap. Do not close it; close the Session.
func (s *Session) Conn() *zk.Conn { return s.conn }

// zkLogger adapts go-zookeeper's Printf logger to slog at debug level: the
// client library logs every reconnect attempt, which is noise at info level.
// The session logs the state changes that matter itself.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	if z.l.Enabled(context.Background(), slog.LevelDebug) {
		z.l.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
	}
}
