package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// protectedPrefix marks nodes whose name carries a per-attempt GUID, in
// Curator's layout: _c_<36-char uuid>-<name><sequence>.
const protectedPrefix = "_c_"

// cleanupTimeout bounds the background removal of a node created for a
// request that was cancelled.
const cleanupTimeout = 30 * time.Second

// createProtected creates an ephemeral sequential node dir/<prefix><seq>
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
// If ctx ends first, createProtected returns ctx's error and, in the
// background, removes the node if the create went through after all.
func (s *Session) createProtected(ctx context.Context, acl []zk.ACL, dir, prefix string, data []byte) (string, error) {
	if ctx.Done() == nil {
		// ctx can never be cancelled: no need for a detached goroutine.
		return s.createByGUID(ctx, acl, dir, prefix, data)
	}
	ch := make(chan result[string], 1)
	go func() {
		// Detached from ctx so the outcome is always known and can be
		// cleaned up; bounded by the session's life and the retry policy.
		p, err := s.createByGUID(context.WithoutCancel(ctx), acl, dir, prefix, data)
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
			cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if err := s.delete(cctx, r.v, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && s.check() == nil {
				s.log.Warn("could not remove node of a cancelled request", "path", r.v, "err", err)
			}
		}()
		return "", ctx.Err()
	}
}

func (s *Session) createByGUID(ctx context.Context, acl []zk.ACL, dir, prefix string, data []byte) (string, error) {
	acl = s.nodeACL(acl)
	if err := s.creatable(acl); err != nil {
		return "", opError("create", joinPath(dir, prefix), err)
	}
	path := joinPath(dir, prefix)
	for n := 1; ; n++ {
		if err := s.check(); err != nil {
			return "", err
		}
		created, err := s.conn.Create(path, data, zk.FlagEphemeral|zk.FlagSequence, acl)
		switch {
		case err == nil:
			return created, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := s.ensurePath(ctx, acl, dir); err != nil {
				return "", err
			}
			continue
		case Classify(err) != Recoverable:
			if err := s.check(); err != nil {
				return "", err
			}
			return "", opError("create", path, err)
		}
		// Recoverable: did the create reach the server?
		if n >= s.policy.attempts() {
			return "", opError("create", path, fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n, err))
		}
		s.log.Debug("connection lost during create; looking for the node by GUID", "dir", dir, "guid", prefix)
		if werr := s.sleep(ctx, s.policy.delay(n)); werr != nil {
			return "", werr
		}
		found, ferr := s.findByPrefix(ctx, dir, prefix)
		if ferr != nil {
			return "", ferr
		}
		if found != "" {
			return found, nil
		}
	}
}

// findByPrefix returns the child of dir whose name starts with prefix and
// whose ephemeral owner is this session, or "" when there is none. A sync
// first makes sure the server we talk to has seen every write the session
// made through any server before.
func (s *Session) findByPrefix(ctx context.Context, dir, prefix string) (string, error) {
	if err := s.sync(ctx, dir); err != nil {
		return "", err
	}
	kids, err := s.children(ctx, dir)
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
		p := joinPath(dir, k)
		_, st, err := s.get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", err
		}
		if st.EphemeralOwner == s.ID() {
			return p, nil
		}
	}
	return "", nil
}
