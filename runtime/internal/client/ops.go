package client

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper takes no context. Every call here runs the request on its own
// goroutine and waits for the reply, ctx, or the end of the session, so no
// caller blocks past its deadline; an abandoned read is simply discarded.

type result[T any] struct {
	v   T
	err error
}

// Await runs fn and waits for it, ctx or the session's end.
func Await[T any](ctx context.Context, s *Session, fn func() (T, error)) (T, error) {
	return AwaitOn(ctx, s, "", fn)
}

// AwaitOn is Await for a request about what (a path): on a stepped
// simulated server, goroutines that stand at one place in the code take
// their turns to send in the order of what (see turns.go).
func AwaitOn[T any](ctx context.Context, s *Session, what string, fn func() (T, error)) (T, error) {
	var zero T
	awaitTurn(s, what)
	if err := s.Err(); err != nil {
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
		if err != nil && s.Err() != nil && errors.Is(err, zk.ErrConnectionClosed) {
			return zero, s.Err()
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
		if r.err != nil && s.Err() != nil && errors.Is(r.err, zk.ErrConnectionClosed) {
			// The session ended under the request: report why.
			return zero, s.Err()
		}
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-s.done:
		return zero, s.Err()
	}
}

// Result is what a read returns: the node's data or children, its stat,
// and the watch it left, if asked for one.
type Result struct {
	Data  []byte
	Kids  []string // the children reads only
	Stat  *zk.Stat
	Watch <-chan zk.Event
}

// Children lists path's children, retrying recoverable errors.
func (s *Ops) Children(ctx context.Context, path string) ([]string, error) {
	r, err := s.ChildrenStat(ctx, path)
	return r.Kids, err
}

// ChildrenStat lists path's children and returns path's stat with them,
// retrying recoverable errors.
func (s *Ops) ChildrenStat(ctx context.Context, path string) (Result, error) {
	var r Result
	err := s.Retry(ctx, func() error {
		var err error
		r, err = AwaitOn(ctx, s.session(), path, func() (Result, error) {
			kids, st, err := s.conn.Children(path)
			return Result{Kids: kids, Stat: st}, err
		})
		return err
	})
	return r, OpError("children", path, err)
}

// Get reads path's data and stat, retrying recoverable errors.
func (s *Ops) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	var r Result
	err := s.Retry(ctx, func() error {
		var err error
		r, err = AwaitOn(ctx, s.session(), path, func() (Result, error) {
			d, st, err := s.conn.Get(path)
			return Result{Data: d, Stat: st}, err
		})
		return err
	})
	return r.Data, r.Stat, OpError("get", path, err)
}

// GetW reads path and leaves a data watch on it. A data watch, unlike an
// exists watch, is not registered when the node is missing (ErrNoNode), so it
// cannot leak.
func (s *Ops) GetW(ctx context.Context, path string) (Result, error) {
	var r Result
	err := s.Retry(ctx, func() error {
		var err error
		r, err = AwaitOn(ctx, s.session(), path, func() (Result, error) {
			d, st, w, err := s.conn.GetW(path)
			return Result{Data: d, Stat: st, Watch: w}, err
		})
		return err
	})
	return r, OpError("get", path, err)
}

// ChildrenW lists path's children and leaves a child watch on it, which
// fires when a child changes or path itself is deleted. Like a data watch it
// is not registered when path is missing.
func (s *Ops) ChildrenW(ctx context.Context, path string) (Result, error) {
	var r Result
	err := s.Retry(ctx, func() error {
		var err error
		r, err = AwaitOn(ctx, s.session(), path, func() (Result, error) {
			kids, st, w, err := s.conn.ChildrenW(path)
			return Result{Kids: kids, Stat: st, Watch: w}, err
		})
		return err
	})
	return r, OpError("children", path, err)
}

// ExistsW reports whether path exists and leaves an exists watch on it,
// which fires when it is created, changed or deleted. Unlike a data watch,
// an exists watch on a missing node stays registered on the server until it
// fires or the session ends: use it only to wait for a creation.
func (s *Ops) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	type r struct {
		ok bool
		st *zk.Stat
		w  <-chan zk.Event
	}
	var got r
	err := s.Retry(ctx, func() error {
		var err error
		got, err = AwaitOn(ctx, s.session(), path, func() (r, error) {
			ok, st, w, err := s.conn.ExistsW(path)
			return r{ok, st, w}, err
		})
		return err
	})
	return got.ok, got.st, got.w, OpError("exists", path, err)
}

// GetOrExistsW reads path with a data watch or, when it is missing, leaves
// an exists watch that fires on its creation. Either way the returned watch
// fires on the next change of path. exists is false when path is missing.
func (s *Ops) GetOrExistsW(ctx context.Context, path string) (r Result, exists bool, err error) {
	for {
		r, err = s.GetW(ctx, path)
		if err == nil {
			return r, true, nil
		}
		if !IsNoNode(err) {
			return r, false, err
		}
		ok, _, w, err := s.ExistsW(ctx, path)
		if err != nil {
			return Result{}, false, err
		}
		if ok {
			// Created between the two reads: read it again. The exists
			// watch just set fires on its next change, harmlessly.
			continue
		}
		return Result{Watch: w}, false, nil
	}
}

// NodeACL returns the ACL for nodes created with handle ACL acl: acl
// itself, or the session's default when empty.
func (s *Ops) NodeACL(acl []zk.ACL) []zk.ACL {
	if len(acl) == 0 {
		return s.acl
	}
	return acl
}

// errNoCredentials is returned, before any request is sent, for a create
// whose ACL names the authenticated creator ("auth" scheme: CreatorAllACL,
// WorldReadACL) on a session without credentials. ZooKeeper would refuse
// it (with "invalid ACL"); what is missing is the caller's credentials, so
// it is reported as ErrNoAuth.
var errNoCredentials = fmt.Errorf("%w: the ACL grants the authenticated creator and this session has no credentials (see WithAuth)", zk.ErrNoAuth)

// Creatable reports errNoCredentials if ZooKeeper would refuse a node with
// acl because the session has no credentials.
func (s *Ops) Creatable(acl []zk.ACL) error {
	if len(s.auth) > 0 {
		return nil
	}
	for _, a := range acl {
		if a.Scheme == "auth" {
			return errNoCredentials
		}
	}
	return nil
}

// Create creates one node with the handle ACL acl (see NodeACL).
func (s *Ops) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	acl = s.NodeACL(acl)
	if err := s.Creatable(acl); err != nil {
		return "", err
	}
	if s.readOnly {
		return "", ErrReadOnly
	}
	return s.conn.Create(path, data, flags, acl)
}

// ConnMulti sends ops as one multi, unless one of its creates could not
// succeed for want of credentials.
func (s *Ops) ConnMulti(ops ...any) ([]zk.MultiResponse, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	for _, op := range ops {
		if c, ok := op.(*zk.CreateRequest); ok {
			if err := s.Creatable(c.Acl); err != nil {
				return nil, err
			}
		}
	}
	return s.conn.Multi(ops...)
}

// Multi sends ops as one ZooKeeper multi, waiting for the reply, ctx or the
// session's end. A multi is not idempotent, so it is not retried here.
func (s *Ops) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return Await(ctx, s.session(), func() ([]zk.MultiResponse, error) { return s.ConnMulti(ops...) })
}

// MultiRetried sends ops as one multi, retrying recoverable errors.
// retried reports whether an attempt's outcome may be hidden: its reply was
// lost, or ctx ended while it was on its way (the server may still apply
// it). A later attempt's failure (a node it creates found existing, one it
// checks found gone) may then be that attempt's doing, and an error
// returned may hide a write that took effect: the caller settles both.
func (s *Ops) MultiRetried(ctx context.Context, ops ...any) (res []zk.MultiResponse, retried bool, err error) {
	err = s.Retry(ctx, func() error {
		var err error
		res, err = Await(ctx, s.session(), func() ([]zk.MultiResponse, error) { return s.ConnMulti(ops...) })
		if IsRecoverable(err) || (err != nil && ctx.Err() != nil) {
			retried = true
		}
		return err
	})
	return res, retried, err
}

// FailedOp returns the index of the op of a failed multi that failed, and
// its error; -1 when none did. The ops before it report no error and the ops
// after it report "runtime inconsistency" (rolled back), so the first error
// is the one.
func FailedOp(res []zk.MultiResponse) (int, error) {
	for i, r := range res {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, nil
}

// DeleteNoted deletes node and writes note as dir's data in one multi (a
// release that tells the next contender it may go ahead), retrying recoverable
// errors: ErrNoNode for node on a retry counts as success (the lost attempt
// did it). A multi refused for another reason (dir not writable under its
// ACL) falls back to deleting node alone.
func (s *Ops) DeleteNoted(ctx context.Context, node, dir string, note []byte) error {
	retried := false
	var refused error
	err := s.Retry(ctx, func() error {
		res, err := Await(ctx, s.session(), func() ([]zk.MultiResponse, error) {
			return s.ConnMulti(&zk.DeleteRequest{Path: node, Version: -1}, &zk.SetDataRequest{Path: dir, Data: note, Version: -1})
		})
		switch i, _ := FailedOp(res); {
		case err == nil:
			return nil
		case IsRecoverable(err):
			retried = true
			return err
		case i == 0 && errors.Is(err, zk.ErrNoNode):
			if retried {
				return nil
			}
			return err
		case i == 1:
			refused = err
			return nil
		}
		return err
	})
	if err == nil && refused != nil {
		s.log.Debug("node deleted without its note", "path", node, "dir", dir, "err", refused)
		return s.Delete(ctx, node, -1)
	}
	return OpError("delete", node, err)
}

// Delete removes path at version (-1 for any), retrying recoverable errors.
// ErrNoNode on a retry counts as success: the lost attempt did the work.
func (s *Ops) Delete(ctx context.Context, path string, version int32) error {
	return s.DeleteRetried(ctx, path, version, false)
}

// DeleteOwned removes path, an ephemeral node of this session whose name
// another session may create again once it is gone (a queue claim). A plain
// retried delete could remove that other session's node: the lost attempt
// deleted ours, another session created the name again, and the retry
// deletes theirs. So after a connection loss it syncs its server with the
// leader, reads the node and deletes it only while this session still owns
// it; a node that is gone, or owned by another session, was deleted by the
// lost attempt. It returns ErrNoNode only when the node was missing at the
// first attempt.
func (s *Ops) DeleteOwned(ctx context.Context, path string) error {
	return s.DeleteRetried(ctx, path, -1, true)
}

// DeleteRetried deletes path at version, retrying recoverable errors: on a
// retry, ErrNoNode counts as success (the lost attempt did it), and with
// owned so does finding the node owned by another session (see
// DeleteOwned).
func (s *Ops) DeleteRetried(ctx context.Context, path string, version int32, owned bool) error {
	retried := false
	err := s.Retry(ctx, func() error {
		if retried && owned {
			// The read that decides must see the lost attempt's delete: a
			// reconnect may have landed on a follower that has not applied
			// it, and still shows our node where another session's now is.
			// A sync first makes that server catch up.
			if _, err := AwaitOn(ctx, s.session(), path, func() (string, error) { return s.conn.Sync(path) }); err != nil && !IsNoNode(err) {
				return err
			}
			r, err := AwaitOn(ctx, s.session(), path, func() (Result, error) {
				ok, st, err := s.conn.Exists(path)
				if !ok {
					st = nil
				}
				return Result{Stat: st}, err
			})
			switch {
			case err != nil:
				return err
			case r.Stat == nil || r.Stat.EphemeralOwner != s.session().ID():
				return nil
			}
		}
		if s.readOnly {
			return ErrReadOnly
		}
		_, err := AwaitOn(ctx, s.session(), path, func() (struct{}, error) {
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
	return OpError("delete", path, err)
}

// Sync makes the server this session talks to catch up with the leader, so
// that the reads that follow see every write the session made before,
// through any server and on any connection (a write whose reply was lost
// included). A missing path is fine. Recoverable errors are retried.
func (s *Ops) Sync(ctx context.Context, path string) error {
	err := s.Retry(ctx, func() error {
		_, err := AwaitOn(ctx, s.session(), path, func() (string, error) { return s.conn.Sync(path) })
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return OpError("sync", path, err)
}

// EnsurePath creates path and its missing ancestors as container nodes, which
// the server removes once they are empty again, so recipes leave no
// persistent litter behind. Missing nodes are created with acl (the
// session's default when empty); existing nodes are left as they are.
func (s *Ops) EnsurePath(ctx context.Context, acl []zk.ACL, path string) error {
	acl = s.NodeACL(acl)
	if err := s.Creatable(acl); err != nil {
		return OpError("create", path, err)
	}
	_, err := s.EnsureContainer(ctx, acl, path, nil)
	return err
}

// EnsureContainer creates p as a container with data unless it exists. It
// tries p first, and only when that create reports a missing parent
// (ErrNoNode) creates the ancestors, top-down, and tries again: when the
// parent exists, as it does for every participant after the first, that is
// one request instead of one per path component, and when it does not, one
// more than creating top-down from the start. A parent reaped (an empty
// container) between the creates is created again, a bounded number of
// times. It reports whether p was created here.
func (s *Ops) EnsureContainer(ctx context.Context, acl []zk.ACL, p string, data []byte) (bool, error) {
	for attempt := 0; ; attempt++ {
		created, err := s.CreateContainer(ctx, acl, p, data)
		parent := p[:strings.LastIndexByte(p, '/')]
		if errors.Is(err, zk.ErrNoNode) && parent != "" && attempt < ensureAttempts {
			for i := 1; i <= len(parent); i++ {
				if i < len(parent) && parent[i] != '/' {
					continue
				}
				if _, err := s.CreateContainer(ctx, acl, parent[:i], nil); err != nil {
					return false, err
				}
			}
			continue
		}
		return created, err
	}
}

// CreateContainer creates p as a container with data; it reports false
// when p exists already.
func (s *Ops) CreateContainer(ctx context.Context, acl []zk.ACL, p string, data []byte) (bool, error) {
	created := true
	err := s.Retry(ctx, func() error {
		_, err := Await(ctx, s.session(), func() (string, error) {
			return s.conn.CreateContainer(p, data, zk.FlagContainer, acl)
		})
		if errors.Is(err, zk.ErrNodeExists) {
			created = false
			return nil
		}
		return err
	})
	if err != nil {
		return false, OpError("create", p, err)
	}
	return created, nil
}

// ensureAttempts bounds EnsureContainer's creates of one node whose parent
// keeps vanishing.
const ensureAttempts = 5

// ProtectedPrefix marks nodes whose name carries a per-attempt GUID, in
// Curator's layout: _c_<36-char uuid>-<name><sequence>.
const ProtectedPrefix = "_c_"

// CleanupTimeout bounds the background removal of a node created for a
// request that was cancelled.
const CleanupTimeout = 30 * time.Second

// CreateProtected creates an ephemeral sequential node dir/<prefix><seq>
// with data and returns its full path; prefix carries a fresh GUID (see
// family.prefix). The node and its missing parents are created with acl
// (the session's default when empty).
//
// A create whose reply is lost (connection loss) may have happened on the
// server. It is never blindly repeated: after the connection is back the
// parent is listed and the node found by its GUID (and checked to belong to
// this session); only if it is absent is the create sent again. So a
// connection loss never leaves an orphan and never makes two nodes.
//
// If ctx ends first, CreateProtected returns ctx's error and, in the
// background, removes the node if the create went through after all.
func (s *Ops) CreateProtected(ctx context.Context, acl []zk.ACL, dir, prefix string, data []byte) (string, error) {
	if ctx.Done() == nil {
		// ctx can never be cancelled: no need for a detached goroutine.
		return s.CreateByGUID(ctx, acl, dir, prefix, data)
	}
	ch := make(chan result[string], 1)
	go func() {
		// Detached from ctx so the outcome is always known and can be
		// cleaned up; bounded by the session's life and the retry policy.
		p, err := s.CreateByGUID(context.WithoutCancel(ctx), acl, dir, prefix, data)
		ch <- result[string]{p, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		go func() {
			r := <-ch
			if r.err != nil {
				return
			}
			cctx, cancel := context.WithTimeout(context.Background(), CleanupTimeout)
			defer cancel()
			if err := s.Delete(cctx, r.v, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && s.session().Err() == nil {
				s.log.Warn("could not remove node of a cancelled request", "path", r.v, "err", err)
			}
		}()
		return "", ctx.Err()
	}
}

// CreateByGUID is CreateProtected's create, in RetryUncertain: after a
// connection loss, FindByPrefix settles whether it happened. The first
// attempt is made before the retry machinery is built, which only a failed
// attempt needs (the plain create costs no closures).
func (s *Ops) CreateByGUID(ctx context.Context, acl []zk.ACL, dir, prefix string, data []byte) (string, error) {
	acl = s.NodeACL(acl)
	if err := s.Creatable(acl); err != nil {
		return "", OpError("create", path.Join(dir, prefix), err)
	}
	g := guidCreate{s: s.session(), ctx: ctx, acl: acl, dir: dir, prefix: prefix, path: path.Join(dir, prefix), data: data}
	o, err := g.attempt()
	if o != OutcomeKnown {
		return g.retry(o, err)
	}
	if err != nil {
		return "", err
	}
	return g.created, nil
}

// guidCreate is one CreateByGUID.
type guidCreate struct {
	s           *Session
	ctx         context.Context
	acl         []zk.ACL
	dir, prefix string
	path        string // dir/prefix
	data        []byte
	created     string // the node, once known
}

// attempt sends the create once.
func (g *guidCreate) attempt() (Outcome, error) {
	s := g.s
	if err := s.Err(); err != nil {
		return OutcomeKnown, err
	}
	var err error
	g.created, err = s.conn.Create(g.path, g.data, zk.FlagEphemeral|zk.FlagSequence, g.acl)
	switch {
	case err == nil:
		return OutcomeKnown, nil
	case errors.Is(err, zk.ErrNoNode):
		if err := OpsOf(s).EnsurePath(g.ctx, g.acl, g.dir); err != nil {
			return OutcomeKnown, err
		}
		return OutcomeResend, nil
	case !IsRecoverable(err):
		if err := s.Err(); err != nil {
			return OutcomeKnown, err
		}
		return OutcomeKnown, OpError("create", g.path, err)
	}
	s.log.Debug("connection lost during create; looking for the node by GUID", "dir", g.dir, "guid", g.prefix)
	return OutcomeHidden, err
}

// settle looks for the node of an attempt whose outcome was hidden.
func (g *guidCreate) settle(ctx context.Context) (Outcome, error) {
	found, err := OpsOf(g.s).FindByPrefix(ctx, g.dir, g.prefix)
	if err != nil || found != "" {
		g.created = found
		return OutcomeKnown, err
	}
	return OutcomeResend, nil
}

// retry carries on in RetryUncertain after a first attempt whose outcome
// was first (with its error firstErr). g is a copy: only this path puts
// it on the heap.
func (g guidCreate) retry(first Outcome, firstErr error) (string, error) {
	err := OpsOf(g.s).RetryUncertain(g.ctx, UncertainWrite{Op: "create", Path: g.path,
		Attempt: func(n int) (Outcome, error) {
			if n == 1 {
				return first, firstErr
			}
			return g.attempt()
		},
		Settle: g.settle,
	})
	if err != nil {
		return "", err
	}
	return g.created, nil
}

// FindByPrefix returns the child of dir whose name starts with prefix and
// whose ephemeral owner is this session, or "" when there is none. A sync
// first makes sure the server we talk to has seen every write the session
// made through any server before.
func (s *Ops) FindByPrefix(ctx context.Context, dir, prefix string) (string, error) {
	if err := s.Sync(ctx, dir); err != nil {
		return "", err
	}
	kids, err := s.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		p := path.Join(dir, k)
		_, st, err := s.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", err
		}
		if st.EphemeralOwner == s.session().ID() {
			return p, nil
		}
	}
	return "", nil
}

// addAuth sends the WithAuth credentials; Connect calls it once the session
// is established.
func (s *Ops) addAuth(ctx context.Context) error {
	for _, a := range s.auth {
		_, err := Await(ctx, s.session(), func() (struct{}, error) { return struct{}{}, s.conn.AddAuth(a.scheme, a.auth) })
		if err != nil {
			return OpError("addAuth", a.scheme, err)
		}
	}
	return nil
}

// Children lists the names of path's children, in no particular order,
// retrying recoverable errors. A missing path is an error wrapping
// zk.ErrNoNode. It is a plain read for tools (zkgen inspect, provision):
// recipes use their own handles.
func (s *Session) Children(ctx context.Context, path string) ([]string, error) {
	return OpsOf(s).Children(ctx, path)
}

// Exists reports whether path exists, retrying recoverable errors. It sets
// no watch.
func (s *Session) Exists(ctx context.Context, path string) (bool, error) {
	_, _, err := OpsOf(s).Get(ctx, path)
	if IsNoNode(err) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes path, whatever its version, retrying recoverable errors.
// It is a plain delete for tools (zkgen reap): recipes use their own
// handles. A path missing at the first attempt is an error wrapping
// zk.ErrNoNode; missing on a retry after a connection loss, it counts as
// deleted by the lost attempt.
func (s *Session) Delete(ctx context.Context, path string) error {
	return OpsOf(s).Delete(ctx, path, -1)
}

// CreatePersistent creates path and its missing ancestors as persistent
// nodes (unlike the container nodes recipes create, they stay when empty),
// with empty data and acl (the session's open ACL when none is given), and
// returns the paths it created, shallowest first. Existing nodes are left as they are, so calling it again
// creates nothing. (A create whose reply was lost and that is retried is
// reported as already existing.)
func (s *Session) CreatePersistent(ctx context.Context, path string, acl ...zk.ACL) ([]string, error) {
	if s.readOnly {
		return nil, OpError("create", path, ErrReadOnly)
	}
	if len(acl) == 0 {
		acl = s.acl
	}
	var created []string
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		made, err := OpsOf(s).CreateIfAbsent(ctx, p, nil, 0, acl)
		if err != nil {
			return created, err
		}
		if made {
			created = append(created, p)
		}
	}
	return created, nil
}

// IsNoNode reports whether err is ZooKeeper's no-node result.
func IsNoNode(err error) bool { return errors.Is(err, zk.ErrNoNode) }

// ChildrenOrExistsW lists path's children with a child watch or, when it
// is missing, leaves an exists watch that fires on its creation. Either
// way the returned watch fires on the next change of path's children or
// of its existence. exists is false when path is missing.
func (s *Ops) ChildrenOrExistsW(ctx context.Context, path string) (r Result, exists bool, err error) {
	for {
		r, err = s.ChildrenW(ctx, path)
		if err == nil {
			return r, true, nil
		}
		if !IsNoNode(err) {
			return r, false, err
		}
		ok, _, w, err := s.ExistsW(ctx, path)
		if err != nil {
			return Result{}, false, err
		}
		if ok {
			// Created between the two reads: list it. The exists watch
			// just set fires on its next change, harmlessly.
			continue
		}
		return Result{Watch: w}, false, nil
	}
}
