package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// --- Writes that may be sent again
//
// Ops.Retry sends its function again after a connection loss hid the
// reply, so it is for reads only (TestRetryWrapsOnlyReads holds the
// recipes to it). A write is sent again only through an operation of this
// layer that states, once for its kind of call, why that is safe and what
// a failure of a later attempt means when an earlier one may have taken
// effect:
//
//   - Delete, DeleteOwned, DeleteNoted, DeleteAll: a node a retry finds
//     gone was deleted by the lost attempt;
//   - CreateIfAbsent: a node of a fixed name a retry finds existing may be
//     the lost attempt's; the caller reads it when whose it is matters;
//   - SetVersion, MultiRetried: a compare-and-set a retry finds changed
//     may have been changed by the lost attempt; the caller reads again;
//   - every other write that is not idempotent (a sequential create, a
//     write whose outcome must be known) runs in RetryUncertain.

// UntilSessionEnds marks ctx so that the retries of the operations run
// with it are bounded by the session's life and ctx, not by the retry
// policy's attempts: for a write whose outcome only the session's end can
// change (an at-least-once ack), which must not fail over an outage the
// session outlives. It is the bound of a settle step (see RetryUncertain).
func UntilSessionEnds(ctx context.Context) context.Context { return settling(ctx) }

// CreateIfAbsent creates a node of a fixed name (flags must not ask for a
// sequential name), retrying recoverable errors. created is false when the
// node exists: another's, or this session's own from an attempt whose reply
// was lost; for an ephemeral node the caller that must know reads its
// owner. A missing parent is ErrNoNode.
func (s *Ops) CreateIfAbsent(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (created bool, err error) {
	if flags&zk.FlagSequence != 0 {
		return false, fmt.Errorf("create %s: %w: CreateIfAbsent cannot send a sequential create again", path, zk.ErrBadArguments)
	}
	err = s.Retry(ctx, func() error {
		_, err := AwaitOn(ctx, s.session(), path, func() (string, error) { return s.Create(path, data, flags, acl) })
		if errors.Is(err, zk.ErrNodeExists) {
			created = false
			return nil
		}
		created = err == nil
		return err
	})
	return created, OpError("create", path, err)
}

// SetVersion writes data to path if its version is version (a
// compare-and-set), retrying recoverable errors. ErrBadVersion may then be
// the doing of an attempt whose reply was lost: the caller reads the node
// again and decides, as it does when another writer came first.
func (s *Ops) SetVersion(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	var st *zk.Stat
	err := s.Retry(ctx, func() error {
		if s.readOnly {
			return ErrReadOnly
		}
		var err error
		st, err = AwaitOn(ctx, s.session(), path, func() (*zk.Stat, error) { return s.conn.Set(path, data, version) })
		return err
	})
	return st, OpError("set", path, err)
}

// DeleteAll deletes paths, at any version, in one multi, retrying
// recoverable errors. ErrNoNode for the first path after an attempt whose
// reply was lost counts as success (the lost attempt deleted them all), so
// the first path must be one whose deletion by another meanwhile makes no
// difference to the caller (its own claim, a dead letter being discarded).
// An at-least-once Ack, for which it would, settles by a marker instead.
// ErrNoNode for a later path, with the first still there,
// is returned: that node went by another's hand, as does ErrNoNode at the
// first attempt. sent reports whether an
// attempt was sent at all: when the session ends after one was, the
// deletion may or may not have happened.
func (s *Ops) DeleteAll(ctx context.Context, paths ...string) (sent bool, err error) {
	ops := make([]any, len(paths))
	for i, p := range paths {
		ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
	}
	retried := false
	err = s.Retry(ctx, func() error {
		sent = true
		res, err := AwaitOn(ctx, s.session(), paths[0], func() ([]zk.MultiResponse, error) { return s.ConnMulti(ops...) })
		if i, _ := FailedOp(res); errors.Is(err, zk.ErrNoNode) && retried && i == 0 {
			return nil
		}
		if IsRecoverable(err) {
			retried = true
		}
		return err
	})
	return sent, err
}
