package runtime

// The client layer (sessions, options, retries, errors, supervision) lives
// in runtime/internal/client; these are its public names, kept here so
// that code written against package runtime (generated code included)
// compiles unchanged. Each type is an alias, each variable the same value,
// each function a call of the client's.

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Session is one ZooKeeper session. Every handle is built from a session and
// shares its fate: when the session ends (Close, or expiry) every handle on it
// reports lost. A Session never opens a new ZooKeeper session by itself; after
// expiry the application connects again.
//
// A Session is safe for concurrent use. What it offers its user is its
// life and a few plain calls, and nothing else (TestSessionMethodSet):
//
//   - [Session.ID], [Session.Done], [Session.Err] and [Session.Close]: the
//     session's identity, the signal and cause of its end, and its end;
//   - [Session.Children], [Session.Exists], [Session.Delete] and
//     [Session.CreatePersistent]: context-bound, retried reads and writes
//     for an application's own znodes beside the recipes';
//   - [Session.Conn]: the go-zookeeper connection, for any other request.
//
// Code that builds a recipe of its own uses these: Conn for its requests,
// Done and Err to learn of the session's end. What the recipes register
// on a session (at its close and end, the tenures Supervise waits for) and
// the operations they are built on belong to the client layer and are not
// reachable from here. The methods are documented with the type itself: go
// doc github.com/zkgen/zkgen/runtime/internal/client.Session.
type Session = client.Session

// opsOf returns s's operations, as the recipes use them: each bound to a
// context and retried, or its outcome resolved, as the session's policy
// says.
func opsOf(s *Session) *client.Ops { return client.OpsOf(s) }

// ready receives from ch if it can without waiting (a closed channel is
// always ready).
func ready[E any](ch <-chan E) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ended is ctx's error, or else the session's end, or nil. A deadline
// that has come counts as ended although ctx's own timer may not have
// fired yet: timers due at one instant (ctx's, and a delay queue's item
// due then) fire in any order, and a wait woken by the other must decide
// as if ctx's had fired first, so that a seed's replay decides alike.
func ended(ctx context.Context, s *Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return s.Err()
}

// Option configures Connect.
type Option = client.Option

// RetryPolicy is exponential backoff with a cap for recoverable errors of
// idempotent operations. Non-idempotent operations (sequential creates) are
// never blindly retried: they are recovered by GUID instead.
type RetryPolicy = client.RetryPolicy

// Class is the error class of the HBase ZooKeeper wrapper write-up.
type Class = client.Class

// DialFunc opens a network connection to a ZooKeeper server, as
// net.Dialer.DialContext does. address is a "host:port" as given to
// Connect, host names included (the dialer resolves them, or not), unless
// WithResolver is given too: then it is one of the addresses the resolver
// returned, "ip:port". ctx bounds the dial.
type DialFunc = client.DialFunc

// ResolveFunc returns the addresses (IP addresses, without a port) of a
// configured host name, as net.Resolver.LookupHost does. ctx bounds the
// lookup.
type ResolveFunc = client.ResolveFunc

// SessionEvent describes a session opened by Supervise.
type SessionEvent = client.SessionEvent

// The error classes (see Classify).
const (
	Normal      = client.Normal
	Recoverable = client.Recoverable
	Fatal       = client.Fatal
)

// Sentinel errors of the session and the client, tested with errors.Is;
// each recipe family declares its own beside its code.
var (

	// ErrSessionExpired means ZooKeeper expired the session (or the client
	// was cut off past the give-up point of WithSessionTimeout and gave it
	// up before the server could expire it). It is fatal: every
	// ephemeral node of the session is gone, every handle built on the session
	// reports lost, and the session is not reopened behind your back.
	ErrSessionExpired = client.ErrSessionExpired

	// ErrClosed means the session was closed with Session.Close.
	ErrClosed = client.ErrClosed

	// ErrReadOnly is the error of a create, delete or multi on a session
	// opened WithReadOnly.
	ErrReadOnly = client.ErrReadOnly

	// ErrRetriesExhausted means a recoverable error (connection loss) kept
	// recurring until the retry policy gave up. It wraps the last error.
	ErrRetriesExhausted = client.ErrRetriesExhausted

	// ErrOutcomeUnknown means a write that is not idempotent (a config's
	// compare-and-set or create, a counter's Add) lost its reply
	// to a connection loss and what the runtime read afterwards cannot tell
	// whether it took effect. It took effect at most once; read and decide.
	// It always wraps the connection error, so IsRecoverable holds.
	ErrOutcomeUnknown = client.ErrOutcomeUnknown

	// ErrTLSHandshake means a connection to a ZooKeeper server failed its TLS
	// handshake, or the server's first answer showed that the two sides do not
	// agree on TLS: the server's certificate is not trusted or does not name the
	// host, the server refused the client's certificate (or its absence), a TLS
	// client met a plain port, or a plain client met a TLS port. Retrying does not
	// help: Connect fails with it as soon as it is seen, and Supervise returns it.
	// It is Fatal; the error wraps the cause (a *tls.CertificateVerificationError,
	// a remote alert, ...).
	//
	// A session that is already established treats such a failure on a
	// reconnection as a failed connection attempt: it tries the other servers
	// and gives up when WithSessionTimeout says.
	ErrTLSHandshake = client.ErrTLSHandshake

	// ErrUnimplemented means the server does not know a request: a
	// ZooKeeper before 3.6 asked for a persistent watch (as a cache
	// sets). Such a server closes the connection after
	// its answer; the session reconnects.
	ErrUnimplemented = client.ErrUnimplemented

	// DefaultRetry is the policy used when WithRetry is not given.
	DefaultRetry = client.DefaultRetry
)

// Connect opens a ZooKeeper session to one of servers ("host:port") and
// blocks until the session is established or ctx ends (then it gives up and
// returns ctx's error; nothing is left behind).
func Connect(ctx context.Context, servers []string, opts ...Option) (*Session, error) {
	return client.Connect(ctx, servers, opts...)
}

// Supervise runs fn on a ZooKeeper session for as long as ctx lasts. It
// connects to servers (retrying with capped, jittered backoff while they are
// unreachable) and calls fn with the session and a context that is
// cancelled, with cause ErrSessionExpired or ErrClosed, when the session
// ends. Once fn has returned, it opens a new session and calls fn again.
//
// It returns nil when ctx ends (after cancelling fn's context and waiting
// for fn) or when fn returns nil while its session lives: the work is done.
// It returns fn's error when fn fails for another reason than the end of its
// session — an error a session's end makes recipes report (ErrLockLost,
// context.Canceled, ...) counts as the session's end once the session is
// seen to end within 2/3 of its timeout, since a tenure's loss can be told
// before the end of the session it comes from — and an ErrTLSHandshake error when a connection fails over TLS
// (WithTLS) before a session is established: a certificate problem that
// retrying does not mend. opts are Connect's (WithTLS, WithDialer, ...),
// plus WithSessionEvents. Each new session tries the servers given to
// Supervise and those its predecessor took from the ensemble's
// configuration (see WithEnsembleConfig), so that a service whose servers
// were all replaced opens its next session on the new ones.
//
// Each new session is logged (at info) and reported to WithSessionEvents.
//
// A Session never reopens itself: its end is told, and every handle on it
// reports lost. Supervise guarantees, across a change of session:
//
//   - one session at a time: the next session is opened only once the
//     previous one is over on the server too, its ephemeral nodes gone. A
//     session the server expired is over at once; one the client gave up
//     on by its own clock (see [WithSessionTimeout]) or closed may live on
//     in the server, so Supervise closes it there first;
//   - one run of the work at a time: fn's context is cancelled, and fn
//     returns, before the next session is opened;
//   - every tenure of the old session (lock, lease, leadership, membership)
//     has reported Lost before fn's context is cancelled;
//   - nothing of an old session is adopted by a new one: recipes create
//     their nodes afresh, and a node of another session is never taken as
//     this session's own.
//
// What is not guaranteed: work done under a tenure that ended is not
// undone. A lock's holder may act after the lock passed on, until it sees
// Lost; fence such work with Guarded or the lock's token ([Lock.Token]).
func Supervise(ctx context.Context, servers []string, fn func(ctx context.Context, s *Session) error, opts ...Option) error {
	return client.Supervise(ctx, servers, fn, opts...)
}

// Classify reports the class of err. A nil error is Normal.
func Classify(err error) Class { return client.Classify(err) }

// IsRecoverable reports whether err is a recoverable ZooKeeper error.
func IsRecoverable(err error) bool { return client.IsRecoverable(err) }

// WithSessionTimeout sets the session timeout asked of the server (which
// clamps it to its own min/max). Default 10s. It also bounds how long the
// client tolerates being disconnected: once 35% of the granted timeout has
// passed since it last heard from the server, the session is treated as
// expired locally, before the server can expire it and grant another client
// what this one held (see liveness.go for why 35%: a client on a follower
// may be known to the ensemble's leader only up to a ping interval and half
// a tick before its last reply). Choose the timeout for the longest
// disconnection to ride out: about three times it.
func WithSessionTimeout(d time.Duration) Option { return client.WithSessionTimeout(d) }

// WithReadOnly makes the session a looker's, as zkgen inspect and zkgen
// serve open: the reads of the recipes' handles skip the housekeeping
// writes they otherwise make (a dead letter's reason left behind by a
// zkgen that kept none is left for a writer to remove), and creates,
// deletes and multis fail with ErrReadOnly before anything is sent.
func WithReadOnly() Option { return client.WithReadOnly() }

// WithRetry sets the retry policy for recoverable errors of idempotent
// operations. Default DefaultRetry. The reads that learn whether a write
// whose reply was lost took effect are not bounded by it: they go on while
// the session lives and ctx lasts.
func WithRetry(p RetryPolicy) Option { return client.WithRetry(p) }

// WithLogger sets the logger. Default slog.Default(). Session state changes
// are logged at info/warn, the client library's own chatter at debug.
func WithLogger(l *slog.Logger) Option { return client.WithLogger(l) }

// WithAuth adds credentials to the session once it is established, as
// ZooKeeper's addAuth does (scheme "digest", auth "user:password" for digest
// ACLs). go-zookeeper sends them again after every reconnection. Connect
// fails if the server refuses them. Default: no credentials. May be given
// more than once.
func WithAuth(scheme string, auth []byte) Option { return client.WithAuth(scheme, auth) }

// WithDialer makes the session open its connections with dial, for a proxy,
// a tunnel or a custom transport; TLS (WithTLS) runs over the connections it
// returns, verifying the configured host name. Without WithResolver, the
// session resolves no host name: dial is given each "host:port" as given
// to Connect. Default: a net.Dialer, given the addresses the session
// resolved. Each connection attempt is bounded by go-zookeeper's connect
// timeout (one second), through ctx.
func WithDialer(dial DialFunc) Option { return client.WithDialer(dial) }

// WithResolver makes the session look up the configured host names with
// resolve: each time it goes round its server list, before the first
// connection attempt of the round, so that a session follows servers that
// move to new addresses. IP addresses given to Connect are used as they
// are. Default: the system resolver (net.DefaultResolver), or, with
// WithDialer, no resolution at all: the dialer is given the "host:port"
// given to Connect. With both options, the dialer is given the addresses
// resolve returns. A lookup at Connect must succeed for every host name
// (Connect fails otherwise); a later one that fails, returns nothing or
// takes over a second leaves that host's last known addresses in use.
func WithResolver(resolve ResolveFunc) Option { return client.WithResolver(resolve) }

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
func WithEnsembleConfig(follow bool) Option { return client.WithEnsembleConfig(follow) }

// WithTLS makes the session speak TLS to the servers' TLS client port
// (ZooKeeper's secureClientPort) with cfg: RootCAs to trust the servers'
// CA, Certificates to present a client certificate (which, with the x509
// authentication provider, makes the session's identity the certificate's
// subject for x509 ACLs). When cfg.ServerName is empty, each connection
// verifies the server's certificate against the host name given to Connect
// for that server (not the IP address it resolved to). cfg is cloned; a nil
// cfg means no TLS.
//
// A handshake that fails, a server that refuses the client's certificate,
// or a port that does not speak TLS makes Connect fail at once with
// ErrTLSHandshake instead of retrying until its context ends. The handshake is bounded by the session
// timeout. Runtime bookkeeping (liveness, zxids) sees the plaintext.
func WithTLS(cfg *tls.Config) Option { return client.WithTLS(cfg) }

// WithRandomSeed makes the sessions opened with this option draw their
// random choices from seed instead of the system's randomness: the GUIDs
// in their node names, the jitter of their back-offs, the order they try
// the servers in and the recipes' random pauses. It is for simulations
// (runtime/zktest/sim), where a run must make the same choices each time
// it is replayed. Each Connect given this one option value draws from a
// stream of its own (and Supervise, for its own pauses, from one more),
// so one process's successive sessions never share a GUID; two option
// values made from one seed do, so give every process a seed of its own.
// Not for production: GUIDs are then only as unique as the seeds.
// Default: the system's randomness.
func WithRandomSeed(seed uint64) Option { return client.WithRandomSeed(seed) }

// WithSessionEvents makes Supervise call fn each time it has opened a
// session, before it runs the work on it. fn must not block. Connect
// ignores it.
func WithSessionEvents(fn func(SessionEvent)) Option { return client.WithSessionEvents(fn) }

// WithMeterProvider records the session's metrics (wait, hold and latency
// histograms, retry, connection-loss, expiry, lost-tenure and partition
// acquisition counters; see docs/telemetry.md) with mp. Default: none,
// nothing recorded.
func WithMeterProvider(mp metric.MeterProvider) Option { return client.WithMeterProvider(mp) }

// WithTracerProvider records a span per recipe operation (lock acquire,
// queue put, campaign, ...) with tp, with the resource's name, kind and
// znode path as attributes and its error recorded. Default: none.
func WithTracerProvider(tp trace.TracerProvider) Option { return client.WithTracerProvider(tp) }

// WithGlobalTelemetry records metrics and spans with OpenTelemetry's global
// providers (otel.GetMeterProvider, otel.GetTracerProvider) as they are
// when Connect runs. Set them first (otel.SetMeterProvider,
// otel.SetTracerProvider): the API forwards what was created before only
// to the first providers it is given, and until then its no-op ones record
// nothing but still cost the hooks their calls. WithMeterProvider and
// WithTracerProvider given after it replace one of them.
func WithGlobalTelemetry() Option { return client.WithGlobalTelemetry() }
