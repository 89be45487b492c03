package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the config nodes, tested with errors.Is.
var (
	// ErrVersionConflict means a compare-and-set found a different version.
	ErrVersionConflict = errors.New("config: version conflict")
	// ErrNoValue means a config node does not exist (never set, or
	// deleted).
	ErrNoValue = errors.New("config: no value")
)

// NoVersion stands for "the node does not exist": it is the version Get
// reports for a missing node and Watch for a deleted one, and
// CompareAndSet(ctx, v, NoVersion) creates the node only if it is missing.
const NoVersion Version = -1

// Versioned is a config value as read at one moment.
type Versioned[T any] struct {
	// Value is the decoded value; zero when !Exists.
	Value T
	// Version is the node's version; NoVersion when !Exists.
	Version Version
	// Exists is false when the node does not exist (never set, or deleted).
	Exists bool
	// Err is set by Watch only: it wraps ErrDecode when the value could not
	// be decoded (Value is zero; Exists and Version are the node's; the
	// stream goes on), and is ErrSessionExpired or ErrClosed on the last
	// state before the channel closes because the session ended.
	Err error
}

// Config is a single typed value in one persistent znode: configuration or,
// with a path parameter per name, a name service (the ZooKeeper guide's "out
// of the box" applications). Writes are plain sets or compare-and-set on the
// node's version; Watch follows the node through creation, changes and
// deletion, as HBase's ZooKeeperNodeTracker does.
//
// Parents of the node are created as container nodes on the first write;
// the node itself is persistent and stays until Delete.
type Config[T any] struct {
	s     *Session
	path  string
	err   error
	codec Codec[T]
	acl   []zk.ACL // of created nodes; empty: the session's default
	name  string   // WithResourceName
	quiet bool     // a Counter's: records no telemetry of its own
}

// NewConfig returns a handle on the config node p, with values encoded by
// codec. It does no I/O. If p is invalid, every method returns p's error.
// opts: WithNodeACL.
func NewConfig[T any](s *Session, p Path, codec Codec[T], opts ...HandleOption) *Config[T] {
	cfg := handleOptions(opts)
	return &Config[T]{s: s, path: p.String(), err: p.Err(), codec: codec, acl: cfg.acl, name: cfg.name}
}

// tel is the telemetry of the config's own operations: none for a
// Counter's, which records its own.
func (c *Config[T]) tel() *telemetry {
	if c.quiet {
		return nil
	}
	return telOf(c.s)
}

// Path returns the config node's path.
func (c *Config[T]) Path() string { return c.path }

// Get reads the value and its version. A missing node is an error wrapping
// ErrNoValue. It does not block beyond the read.
func (c *Config[T]) Get(ctx context.Context) (_ T, _ Version, err error) {
	defer c.tel().begin(ctx, opConfigGet, "config", c.name, c.path).end(&err)
	var zero T
	if c.err != nil {
		return zero, NoVersion, c.err
	}
	data, st, err := opsOf(c.s).Get(ctx, c.path)
	if client.IsNoNode(err) {
		return zero, NoVersion, fmt.Errorf("config %s: %w", c.path, ErrNoValue)
	}
	if err != nil {
		return zero, NoVersion, err
	}
	v, err := c.codec.Decode(data)
	if err != nil {
		return zero, Version(st.Version), fmt.Errorf("config %s: %w", c.path, err)
	}
	return v, Version(st.Version), nil
}

// Set writes v whatever the current version, creating the node (and its
// parents) if it is missing, and returns the version it wrote. It reads the
// version and compare-and-sets it, again while other writers get in
// between, so v is written once: a connection loss is retried when the node
// shows the write did not happen, and counts as success when the node holds
// v at the version the write made (only an identical value written by
// someone else at that moment looks the same). Otherwise — the node moved
// on after the write was sent — Set returns an error wrapping
// ErrOutcomeUnknown (recoverable): v was written once or not at all, and is
// never written again over a newer value.
func (c *Config[T]) Set(ctx context.Context, v T) (_ Version, err error) {
	defer c.tel().begin(ctx, opConfigSet, "config", c.name, c.path).end(&err)
	if c.err != nil {
		return NoVersion, c.err
	}
	data, err := c.codec.Encode(v)
	if err != nil {
		return NoVersion, fmt.Errorf("config %s: encoding value: %w", c.path, err)
	}
	for {
		ver := NoVersion
		_, st, err := opsOf(c.s).Get(ctx, c.path)
		switch {
		case err == nil:
			ver = Version(st.Version)
		case !client.IsNoNode(err):
			return NoVersion, err
		}
		got, err := c.write(ctx, data, ver, true)
		if errors.Is(err, ErrVersionConflict) {
			continue // another writer got in between: read again
		}
		return got, err
	}
}

// CompareAndSet writes v only if the node's version is still ver (with
// NoVersion: only if the node does not exist, creating it), and returns the
// new version. Otherwise nothing is written and the error wraps
// ErrVersionConflict. It does not block beyond the write.
//
// A compare-and-set is not idempotent. After a connection loss the node is
// read (after a sync, so the read follows the lost write): if it still has
// version ver (or is still missing, for NoVersion) the write did not happen
// and is sent again; otherwise the error wraps ErrOutcomeUnknown
// (recoverable): read the value and decide.
//
// What a caller can rely on: success means v was written, at the returned
// version; ErrVersionConflict means nothing was written; any other error
// (ErrOutcomeUnknown, the session's end, ctx's end while the request was in
// flight) means v was written at most once — maybe not at all.
func (c *Config[T]) CompareAndSet(ctx context.Context, v T, ver Version) (_ Version, err error) {
	defer c.tel().begin(ctx, opConfigCAS, "config", c.name, c.path).end(&err)
	if c.err != nil {
		return NoVersion, c.err
	}
	data, err := c.codec.Encode(v)
	if err != nil {
		return NoVersion, fmt.Errorf("config %s: encoding value: %w", c.path, err)
	}
	if ver < 0 && ver != NoVersion {
		return NoVersion, fmt.Errorf("config %s: CompareAndSet with version %d", c.path, ver)
	}
	return c.write(ctx, data, ver, false)
}

// write compare-and-sets data at version ver (NoVersion: creates the node,
// and its parents), in RetryUncertain. After a connection loss it syncs and
// reads the node: unchanged means the write did not happen, and it is sent
// again; for a blind write (Set), the node holding data at the version the
// write makes means it did. Anything else is ErrOutcomeUnknown.
func (c *Config[T]) write(ctx context.Context, data []byte, ver Version, blind bool) (Version, error) {
	op := "set"
	if ver == NoVersion {
		op = "create"
	}
	got := NoVersion
	var unknown error // the write's outcome cannot be learnt
	err := opsOf(c.s).RetryUncertain(ctx, client.UncertainWrite{Op: op, Path: c.path,
		Attempt: func(int) (client.Outcome, error) {
			var o client.Outcome
			var err error
			got, o, err = c.send(ctx, op, data, ver)
			if o == client.OutcomeHidden {
				err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
				unknown = client.OpError(op, c.path, err)
			}
			return o, err
		},
		Settle: func(ctx context.Context) (client.Outcome, error) {
			var o client.Outcome
			var err error
			got, o, err = c.settle(ctx, data, ver, blind, unknown)
			return o, err
		},
	})
	if err != nil {
		return NoVersion, err
	}
	return got, nil
}

// send sends the write once and returns the version it wrote.
func (c *Config[T]) send(ctx context.Context, op string, data []byte, ver Version) (Version, client.Outcome, error) {
	var err error
	if ver == NoVersion {
		_, err = client.Await(ctx, c.s, func() (string, error) { return opsOf(c.s).Create(c.path, data, 0, c.acl) })
		switch {
		case err == nil:
			return 0, client.OutcomeKnown, nil
		case errors.Is(err, zk.ErrNodeExists):
			return NoVersion, client.OutcomeKnown, fmt.Errorf("config %s: exists: %w", c.path, ErrVersionConflict)
		case client.IsNoNode(err):
			if err := opsOf(c.s).EnsurePath(ctx, c.acl, path.Dir(c.path)); err != nil {
				return NoVersion, client.OutcomeKnown, err
			}
			return NoVersion, client.OutcomeResend, nil
		}
	} else {
		var st *zk.Stat
		st, err = client.Await(ctx, c.s, func() (*zk.Stat, error) { return c.s.Conn().Set(c.path, data, int32(ver)) })
		switch {
		case err == nil:
			return Version(st.Version), client.OutcomeKnown, nil
		case errors.Is(err, zk.ErrBadVersion), client.IsNoNode(err):
			return NoVersion, client.OutcomeKnown, fmt.Errorf("config %s: version %d: %w", c.path, ver, ErrVersionConflict)
		}
	}
	o, err := client.AfterSend(op, c.path, err)
	return NoVersion, o, err
}

// settle learns, after a connection loss, whether the write of data at
// version ver happened: it syncs and reads the node (see write). unknown is
// the error when it cannot tell.
func (c *Config[T]) settle(ctx context.Context, data []byte, ver Version, blind bool, unknown error) (Version, client.Outcome, error) {
	if err := opsOf(c.s).Sync(ctx, c.path); err != nil {
		return NoVersion, client.OutcomeKnown, err
	}
	now, st, gerr := opsOf(c.s).Get(ctx, c.path)
	switch {
	case client.IsNoNode(gerr) && ver == NoVersion:
		return NoVersion, client.OutcomeResend, nil // not created: send again
	case client.IsNoNode(gerr):
		return NoVersion, client.OutcomeKnown, unknown
	case gerr != nil:
		return NoVersion, client.OutcomeKnown, gerr
	case ver != NoVersion && Version(st.Version) == ver:
		return NoVersion, client.OutcomeResend, nil // not applied: send again
	case blind && Version(st.Version) == ver+1 && bytes.Equal(now, data):
		return ver + 1, client.OutcomeKnown, nil // applied (NoVersion+1 is 0, a new node's version)
	}
	return NoVersion, client.OutcomeKnown, unknown
}

// Delete removes the node. Deleting a missing node is not an error. Parents
// created as container nodes are removed by the server once empty.
func (c *Config[T]) Delete(ctx context.Context) (err error) {
	defer c.tel().begin(ctx, opConfigDelete, "config", c.name, c.path).end(&err)
	if c.err != nil {
		return c.err
	}
	if err := opsOf(c.s).Delete(ctx, c.path, -1); err != nil && !client.IsNoNode(err) {
		return err
	}
	return nil
}

// Watch streams the node's value: the current state first, then every
// change — creation, a new value, deletion. A deletion (or a node that does
// not exist yet) is delivered as Versioned{Exists: false, Version:
// NoVersion}. Each read re-arms the watch in the same request (a data watch
// when the node exists, an exists watch when it does not), so no change is
// missed; a consumer slower than the changes receives the newest state
// (intermediate values may be skipped), and the final state is always
// delivered. A value that cannot be decoded is delivered with Exists true,
// its Version, a zero Value and Err wrapping ErrDecode, and logged. The
// channel is closed when ctx or the session ends; when the session ends, the
// newest state is delivered once more with Err set to why (ErrSessionExpired
// or ErrClosed) before it closes. A handle that cannot work (a bad path)
// gives one state with Err set, then the close. An exists watch on a
// missing node may stay registered on the server until the node is created.
func (c *Config[T]) Watch(ctx context.Context) <-chan Versioned[T] {
	if c.err != nil {
		return failedStream(ctx, Versioned[T]{Version: NoVersion, Err: c.err})
	}
	return stream(ctx, c.s, "config "+c.path, func(ctx context.Context) (snapshot[Versioned[T]], error) {
		r, ok, err := opsOf(c.s).GetOrExistsW(ctx, c.path)
		if err != nil {
			return snapshot[Versioned[T]]{}, err
		}
		if !ok {
			return snapshot[Versioned[T]]{v: Versioned[T]{Version: NoVersion}, key: "absent", watch: r.Watch}, nil
		}
		out := Versioned[T]{Version: Version(r.Stat.Version), Exists: true}
		if out.Value, err = c.codec.Decode(r.Data); err != nil {
			opsOf(c.s).Log().Warn("config: undecodable value", "path", c.path, "err", err)
			out.Err = fmt.Errorf("config %s: %w", c.path, err)
		}
		return snapshot[Versioned[T]]{v: out, key: fmt.Sprint(r.Stat.Mzxid), watch: r.Watch}, nil
	}, func(last Versioned[T], err error) Versioned[T] {
		if !last.Exists {
			last.Version = NoVersion
		}
		last.Err = err
		return last
	})
}
