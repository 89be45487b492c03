package runtime

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper takes no context. Every call here runs the request on its own
// goroutine and waits for the reply, ctx, or the end of the session, so no
// caller blocks past its deadline; an abandoned read is simply discarded.

type result[T any] struct {
	v   T
	err error
}

// await runs fn and waits for it, ctx or the session's end.
func await[T any](ctx context.Context, s *Session, fn func() (T, error)) (T, error) {
	var zero T
	if err := s.check(); err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		// ctx can never be cancelled: nothing to wait for besides the
		// reply, which go-zookeeper delivers (or fails) by itself when the
		// session ends. Calling inline saves two goroutine hand-offs per
		// request.
		v, err := fn()
		if err != nil && s.check() != nil && errors.Is(err, zk.ErrConnectionClosed) {
			return zero, s.check()
		}
		return v, err
	}
	ch := make(chan result[T], 1)
	go func() {
		v, err := fn()
		ch <- result[T]{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && s.check() != nil && errors.Is(r.err, zk.ErrConnectionClosed) {
			// The session ended under the request: report why.
			return zero, s.check()
		}
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-s.done:
		return zero, s.Err()
	}
}

type getResult struct {
	data  []byte
	kids  []string // childrenW only
	stat  *zk.Stat
	watch <-chan zk.Event
}

// children lists path's children, retrying recoverable errors.
func (s *Session) children(ctx context.Context, path string) ([]string, error) {
	r, err := s.childrenStat(ctx, path)
	return r.kids, err
}

// childrenStat lists path's children and returns path's stat with them,
// retrying recoverable errors.
func (s *Session) childrenStat(ctx context.Context, path string) (getResult, error) {
	var r getResult
	err := s.retry(ctx, func() error {
		var err error
		r, err = await(ctx, s, func() (getResult, error) {
			kids, st, err := s.conn.Children(path)
			return getResult{kids: kids, stat: st}, err
		})
		return err
	})
	return r, opError("children", path, err)
}

// get reads path's data and stat, retrying recoverable errors.
func (s *Session) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	var r getResult
	err := s.retry(ctx, func() error {
		var err error
		r, err = await(ctx, s, func() (getResult, error) {
			d, st, err := s.conn.Get(path)
			return getResult{data: d, stat: st}, err
		})
		return err
	})
	return r.data, r.stat, opError("get", path, err)
}

// getW reads path and leaves a data watch on it. A data watch, unlike an
// exists watch, is not registered when the node is missing (ErrNoNode), so it
// cannot leak.
func (s *Session) getW(ctx context.Context, path string) (getResult, error) {
	var r getResult
	err := s.retry(ctx, func() error {
		var err error
		r, err = await(ctx, s, func() (getResult, error) {
			d, st, w, err := s.conn.GetW(path)
			return getResult{data: d, stat: st, watch: w}, err
		})
		return err
	})
	return r, opError("get", path, err)
}

// childrenW lists path's children and leaves a child watch on it, which
// fires when a child changes or path itself is deleted. Like a data watch it
// is not registered when path is missing.
func (s *Session) childrenW(ctx context.Context, path string) (getResult, error) {
	var r getResult
	err := s.retry(ctx, func() error {
		var err error
		r, err = await(ctx, s, func() (getResult, error) {
			kids, st, w, err := s.conn.ChildrenW(path)
			return getResult{kids: kids, stat: st, watch: w}, err
		})
		return err
	})
	return r, opError("children", path, err)
}

// delete removes path at version (-1 for any), retrying recoverable errors.
// ErrNoNode on a retry counts as success: the lost attempt did the work.
func (s *Session) delete(ctx context.Context, path string, version int32) error {
	return s.deleteRetried(ctx, path, version, false)
}

// deleteOwned removes path, an ephemeral node of this session whose name
// another session may create again once it is gone (a queue claim). A plain
// retried delete could remove that other session's node: the lost attempt
// deleted ours, another session created the name again, and the retry
// deletes theirs. So after a connection loss it reads the node first and
// deletes it only while this session still owns it; a node that is gone, or
// owned by another session, was deleted by the lost attempt. It returns
// ErrNoNode only when the node was missing at the first attempt.
func (s *Session) deleteOwned(ctx context.Context, path string) error {
	return s.deleteRetried(ctx, path, -1, true)
}

func (s *Session) deleteRetried(ctx context.Context, path string, version int32, owned bool) error {
	retried := false
	err := s.retry(ctx, func() error {
		if retried && owned {
			r, err := await(ctx, s, func() (getResult, error) {
				ok, st, err := s.conn.Exists(path)
				if !ok {
					st = nil
				}
				return getResult{stat: st}, err
			})
			switch {
			case err != nil:
				return err
			case r.stat == nil || r.stat.EphemeralOwner != s.ID():
				return nil
			}
		}
		_, err := await(ctx, s, func() (struct{}, error) {
			return struct{}{}, s.conn.Delete(path, version)
		})
		if errors.Is(err, zk.ErrNoNode) && retried {
			return nil
		}
		if IsRecoverable(err) {
			retried = true
		}
		return err
	})
	return opError("delete", path, err)
}

// sync makes the server this session talks to catch up with the leader, so
// that the reads that follow see every write the session made before,
// through any server and on any connection (a write whose reply was lost
// included). A missing path is fine. Recoverable errors are retried.
func (s *Session) sync(ctx context.Context, path string) error {
	err := s.retry(ctx, func() error {
		_, err := await(ctx, s, func() (string, error) { return s.conn.Sync(path) })
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return opError("sync", path, err)
}

// ensurePath creates path and its missing ancestors as container nodes, which
// the server removes once they are empty again, so recipes leave no
// persistent litter behind. Missing nodes are created with acl (the
// session's default when empty); existing nodes are left as they are.
func (s *Session) ensurePath(ctx context.Context, acl []zk.ACL, path string) error {
	acl = s.nodeACL(acl)
	if err := s.creatable(acl); err != nil {
		return opError("create", path, err)
	}
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		err := s.retry(ctx, func() error {
			_, err := await(ctx, s, func() (string, error) {
				return s.conn.CreateContainer(p, nil, zk.FlagContainer, acl)
			})
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return opError("create", p, err)
		}
	}
	return nil
}

// joinPath joins a directory and a child name.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// baseName returns the last segment of path.
func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// existsW reports whether path exists and leaves an exists watch on it,
// which fires when it is created, changed or deleted. Unlike a data watch,
// an exists watch on a missing node stays registered on the server until it
// fires or the session ends: use it only to wait for a creation.
func (s *Session) existsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	type r struct {
		ok bool
		st *zk.Stat
		w  <-chan zk.Event
	}
	var got r
	err := s.retry(ctx, func() error {
		var err error
		got, err = await(ctx, s, func() (r, error) {
			ok, st, w, err := s.conn.ExistsW(path)
			return r{ok, st, w}, err
		})
		return err
	})
	return got.ok, got.st, got.w, opError("exists", path, err)
}
