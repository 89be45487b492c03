package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
)

// Version is the version of a config node (ZooKeeper's data version). It
// grows by one with every write and starts again at 0 when the node is
// deleted and created again.
type Version int32

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
}

// NewConfig returns a handle on the config node p, with values encoded by
// codec. It does no I/O. If p is invalid, every method returns p's error.
func NewConfig[T any](s *Session, p Path, codec Codec[T]) *Config[T] {
	return &Config[T]{s: s, path: p.String(), err: p.Err(), codec: codec}
}

// Path returns the config node's path.
func (c *Config[T]) Path() string { return c.path }

// Get reads the value and its version. A missing node is an error wrapping
// ErrNoValue. It does not block beyond the read.
func (c *Config[T]) Get(ctx context.Context) (T, Version, error) {
	var zero T
	if c.err != nil {
		return zero, NoVersion, c.err
	}
	data, st, err := c.s.get(ctx, c.path)
	if isNoNode(err) {
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
// parents) if it is missing, and returns the new version. A set is
// idempotent, so connection losses are retried.
func (c *Config[T]) Set(ctx context.Context, v T) (Version, error) {
	if c.err != nil {
		return NoVersion, c.err
	}
	data, err := c.codec.Encode(v)
	if err != nil {
		return NoVersion, fmt.Errorf("config %s: encoding value: %w", c.path, err)
	}
	for {
		var st *zk.Stat
		err := c.s.retry(ctx, func() error {
			var err error
			st, err = await(ctx, c.s, func() (*zk.Stat, error) { return c.s.conn.Set(c.path, data, -1) })
			return err
		})
		if err == nil {
			return Version(st.Version), nil
		}
		if !isNoNode(err) {
			return NoVersion, opError("set", c.path, err)
		}
		ver, err := c.create(ctx, data)
		if errors.Is(err, ErrVersionConflict) {
			continue // created by someone else meanwhile: set it
		}
		return ver, err
	}
}

// create creates the node with data (and its parents). It returns
// ErrVersionConflict if the node exists. After a connection loss it looks:
// still missing means the create did not happen, and it is sent again;
// present means the outcome is unknown, and the connection error is
// returned (recoverable: read and decide).
func (c *Config[T]) create(ctx context.Context, data []byte) (Version, error) {
	for n := 1; ; n++ {
		_, err := await(ctx, c.s, func() (string, error) { return c.s.conn.Create(c.path, data, 0, c.s.acl) })
		switch {
		case err == nil:
			return 0, nil
		case errors.Is(err, zk.ErrNodeExists):
			return NoVersion, fmt.Errorf("config %s: exists: %w", c.path, ErrVersionConflict)
		case isNoNode(err):
			if err := c.s.ensurePath(ctx, path.Dir(c.path)); err != nil {
				return NoVersion, err
			}
			continue
		case !IsRecoverable(err):
			return NoVersion, opError("create", c.path, err)
		}
		if n >= c.s.policy.attempts() {
			return NoVersion, opError("create", c.path, fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n, err))
		}
		if werr := c.s.sleep(ctx, c.s.policy.delay(n)); werr != nil {
			return NoVersion, werr
		}
		if _, _, gerr := c.s.get(ctx, c.path); gerr == nil {
			return NoVersion, opError("create", c.path, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err))
		} else if !isNoNode(gerr) {
			return NoVersion, gerr
		}
	}
}

// CompareAndSet writes v only if the node's version is still ver (with
// NoVersion: only if the node does not exist, creating it), and returns the
// new version. Otherwise nothing is written and the error wraps
// ErrVersionConflict. It does not block beyond the write.
//
// A compare-and-set is not idempotent. After a connection loss the node is
// read: if it still has version ver the write did not happen and is sent
// again; otherwise the outcome is unknown and the connection error
// (recoverable) is returned: read the value and decide.
func (c *Config[T]) CompareAndSet(ctx context.Context, v T, ver Version) (Version, error) {
	if c.err != nil {
		return NoVersion, c.err
	}
	data, err := c.codec.Encode(v)
	if err != nil {
		return NoVersion, fmt.Errorf("config %s: encoding value: %w", c.path, err)
	}
	if ver == NoVersion {
		return c.create(ctx, data)
	}
	if ver < 0 {
		return NoVersion, fmt.Errorf("config %s: CompareAndSet with version %d", c.path, ver)
	}
	for n := 1; ; n++ {
		st, err := await(ctx, c.s, func() (*zk.Stat, error) { return c.s.conn.Set(c.path, data, int32(ver)) })
		switch {
		case err == nil:
			return Version(st.Version), nil
		case errors.Is(err, zk.ErrBadVersion), isNoNode(err):
			return NoVersion, fmt.Errorf("config %s: version %d: %w", c.path, ver, ErrVersionConflict)
		case !IsRecoverable(err):
			return NoVersion, opError("set", c.path, err)
		}
		if n >= c.s.policy.attempts() {
			return NoVersion, opError("set", c.path, fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n, err))
		}
		if werr := c.s.sleep(ctx, c.s.policy.delay(n)); werr != nil {
			return NoVersion, werr
		}
		_, st, gerr := c.s.get(ctx, c.path)
		switch {
		case gerr == nil && Version(st.Version) == ver:
			continue // not applied: send again
		case gerr == nil, isNoNode(gerr):
			return NoVersion, opError("set", c.path, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err))
		default:
			return NoVersion, gerr
		}
	}
}

// Delete removes the node. Deleting a missing node is not an error. Parents
// created as container nodes are removed by the server once empty.
func (c *Config[T]) Delete(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	if err := c.s.delete(ctx, c.path, -1); err != nil && !isNoNode(err) {
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
// its Version and a zero Value, and logged. The channel is closed when ctx
// or the session ends; an exists watch on a missing node may stay
// registered on the server until the node is created.
func (c *Config[T]) Watch(ctx context.Context) <-chan Versioned[T] {
	if c.err != nil {
		ch := make(chan Versioned[T])
		close(ch)
		return ch
	}
	return stream(ctx, c.s, "config "+c.path, func(ctx context.Context) (snapshot[Versioned[T]], error) {
		r, ok, err := c.s.getOrExistsW(ctx, c.path)
		if err != nil {
			return snapshot[Versioned[T]]{}, err
		}
		if !ok {
			return snapshot[Versioned[T]]{v: Versioned[T]{Version: NoVersion}, key: "absent", watch: r.watch}, nil
		}
		out := Versioned[T]{Version: Version(r.stat.Version), Exists: true}
		if out.Value, err = c.codec.Decode(r.data); err != nil {
			c.s.log.Warn("config: undecodable value", "path", c.path, "err", err)
		}
		return snapshot[Versioned[T]]{v: out, key: fmt.Sprint(r.stat.Mzxid), watch: r.watch}, nil
	})
}
