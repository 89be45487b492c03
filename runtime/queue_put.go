package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// put puts items, on a machine of the session's pool (see putOn).
func (q *queue[T]) put(ctx context.Context, prio int, items []T) (int, error) {
	if q.pool == nil {
		return q.putOn(ctx, prio, items)
	}
	m := q.pool.borrow(putSide)
	defer q.pool.give(putSide, m)
	return m.putOn(ctx, prio, items)
}

// putOn encodes items and puts them in order, in multis of at most
// maxBatchOps items / maxBatchBytes. It returns how many were put. prio is
// the items' priority index, or for a delay queue their due time in Unix
// milliseconds (see dueMillis).
func (q *queue[T]) putOn(ctx context.Context, prio int, items []T) (n int, err error) {
	defer q.telOp(ctx, opQueuePut, false).end(&err)
	if q.err != nil {
		return 0, q.err
	}
	if q.priority && (prio < 0 || prio >= q.levels) {
		return 0, fmt.Errorf("queue %s: %w: %d (have %d)", q.dir, ErrPriorityRange, prio, q.levels)
	}
	if err := guardSpec(ctx, q.s, q.dir, q.acl, q.record()); err != nil {
		return 0, err
	}
	datas := make([][]byte, len(items))
	for i, it := range items {
		d, err := q.codec.Encode(it)
		if err != nil {
			return 0, fmt.Errorf("queue %s: encoding item %d: %w", q.dir, i, err)
		}
		datas[i] = d
	}
	if err := q.lock(ctx, &q.prod.side); err != nil {
		return 0, err
	}
	defer q.unlock(&q.prod.side)
	done := 0
	for done < len(datas) {
		limit := maxBatchOps
		if q.bucketSize > 0 {
			// Fill the bucket up to its size, not past it.
			if _, err := q.openBucket(ctx); err != nil && !errors.Is(err, errRetryPut) {
				return done, err
			}
			limit = min(limit, max(1, q.bucketSize-q.prod.next))
		}
		n, bytes := 0, 0
		for done+n < len(datas) && n < limit && (n == 0 || bytes+len(datas[done+n]) <= maxBatchBytes) {
			bytes += len(datas[done+n])
			n++
		}
		if err := q.putChunk(ctx, prio, datas[done:done+n]); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// openBucket returns the bucket puts go to, finding or creating it.
func (q *queue[T]) openBucket(ctx context.Context) (string, error) {
	if q.prod.bucket != "" {
		return q.prod.bucket, nil
	}
	bs, err := q.buckets(ctx)
	if err != nil {
		return "", err
	}
	var b string
	if len(bs) == 0 {
		if err := opsOf(q.s).EnsurePath(ctx, q.acl, q.dir); err != nil {
			return "", err
		}
		b = bucketName(0)
	} else {
		b = bs[len(bs)-1]
		_, st, err := opsOf(q.s).Get(ctx, q.bucketPath(b))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return "", errRetryPut
		case err != nil:
			return "", err
		case st.Version == 0:
			// A child's sequence number is its parent's cversion.
			q.prod.bucket, q.prod.next = b, int(st.Cversion)
			return b, nil
		}
		b = nextBucket(b) // highest is sealed: its successor was not made yet
	}
	if err := q.createNode(ctx, q.bucketPath(b), nil); err != nil {
		return "", err
	}
	q.prod.bucket, q.prod.next = b, 0
	return b, nil
}

// errRetryPut makes putChunk look for the open bucket again.
var errRetryPut = errors.New("queue: bucket changed, retry")

// putChunk puts datas atomically: one multi that checks the bucket is open,
// creates an ephemeral marker named by a fresh GUID, and creates the items.
// After a connection loss the marker tells whether the multi happened: the
// items themselves may already have been consumed, so looking for them
// would prove nothing, but consumers never touch the marker. The marker
// lingers until the next put, whose multi deletes it (or a moment of
// idleness, see lingering): a marker costs no request of its own.
//
// extra ops (a Requeue's delete of its dead letter) go at the end of the
// multi; when one of them fails, putChunk returns errExtraFailed.
func (q *queue[T]) putChunk(ctx context.Context, prio int, datas [][]byte, extra ...any) error {
	marker := q.newMarker()
	// Once a multi is sent its outcome must be learnt, so the sending and
	// the recovery run detached from ctx (bounded by the retry policy and
	// the session); ctx is checked before each attempt.
	dctx := context.WithoutCancel(ctx)
	return q.markedMulti(dctx, marker, &q.prod.mark, ErrPutUncertain, func() (client.Outcome, error) {
		return q.putOnce(ctx, dctx, marker, prio, datas, extra)
	})
}

// errExtraFailed means an extra op of putChunk failed: nothing was put.
var errExtraFailed = errors.New("queue: extra op of a put failed")

// putOnce is one attempt of putChunk: the multi sent on dctx into the open
// bucket, found with ctx.
func (q *queue[T]) putOnce(ctx, dctx context.Context, marker string, prio int, datas [][]byte, extra []any) (client.Outcome, error) {
	if err := q.s.Err(); err != nil {
		return client.OutcomeKnown, err
	}
	if err := ctx.Err(); err != nil {
		return client.OutcomeKnown, err
	}
	b, err := q.openBucket(ctx)
	if errors.Is(err, errRetryPut) {
		return client.OutcomeResend, nil
	}
	if err != nil {
		return client.OutcomeKnown, err
	}
	bp := q.bucketPath(b)
	old := q.prod.mark.path
	ops := append(q.putOps(bp, marker, old, prio, datas), extra...)
	res, err := client.Await(dctx, q.s, func() ([]zk.MultiResponse, error) { return opsOf(q.s).ConnMulti(ops...) })
	switch {
	case err == nil:
		q.prod.mark.path = marker
		q.afterPut(dctx, b, res[len(res)-1-len(extra)].String)
		return client.OutcomeKnown, nil
	case IsRecoverable(err):
		return client.OutcomeHidden, err
	case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed), errors.Is(err, zk.ErrSessionExpired), q.s.Err() != nil:
		return client.OutcomeKnown, fmt.Errorf("queue %s: %w: %w", q.dir, ErrPutUncertain, err)
	}
	switch failed, _ := client.FailedOp(res); {
	case failed == 0: // bucket sealed or deleted: find the open one
		q.prod.bucket = ""
	case failed == 1 && errors.Is(err, zk.ErrNoNode): // no marker directory yet
		if err := opsOf(q.s).EnsurePath(ctx, q.acl, joinPath(q.dir, marksDir)); err != nil {
			return client.OutcomeKnown, err
		}
	case failed == 2 && old != "" && errors.Is(err, zk.ErrNoNode):
		q.prod.mark.path = "" // the old marker is gone already (reaped)
	case failed >= len(ops)-len(extra):
		return client.OutcomeKnown, fmt.Errorf("queue %s: %w: %w", q.dir, errExtraFailed, err)
	default:
		return client.OutcomeKnown, client.OpError("multi", bp, err)
	}
	return client.OutcomeResend, nil
}

// putOps are the ops of one put multi into bucket bp: check that the bucket
// is open, create the marker, delete the previous put's marker old (if
// any), create the items.
func (q *queue[T]) putOps(bp, marker, old string, prio int, datas [][]byte) []any {
	ops := make([]any, 0, len(datas)+3)
	ops = append(ops,
		&zk.CheckVersionRequest{Path: bp, Version: 0},
		&zk.CreateRequest{Path: marker, Flags: zk.FlagEphemeral, Acl: opsOf(q.s).NodeACL(q.acl)})
	if old != "" {
		ops = append(ops, &zk.DeleteRequest{Path: old, Version: -1})
	}
	for _, d := range datas {
		inline := len(d) <= q.inline
		data := d
		if inline {
			data = nil
		}
		name := joinPath(bp, itemNamePrefix(q.priority, prio, d, inline))
		if q.delay {
			name = joinPath(bp, delayItemPrefix(int64(prio)))
		}
		ops = append(ops, &zk.CreateRequest{Path: name, Data: data, Flags: zk.FlagSequence, Acl: opsOf(q.s).NodeACL(q.acl)})
	}
	return ops
}

// afterPut seals bucket b and opens the next one when the put's last item
// reached the bucket size.
func (q *queue[T]) afterPut(ctx context.Context, b, last string) {
	if q.bucketSize == 0 {
		return
	}
	seq, ok := seqOf(last)
	if !ok {
		return
	}
	q.prod.next = int(seq) + 1
	if q.prod.next < q.bucketSize {
		return
	}
	q.prod.bucket = ""
	_, err := client.Await(ctx, q.s, func() (*zk.Stat, error) { return q.s.Conn().Set(q.bucketPath(b), []byte(sealedData), 0) })
	if err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
		return // the next put finds the bucket open and tries again
	}
	if err := q.createNode(ctx, q.bucketPath(nextBucket(b)), nil); err == nil {
		q.prod.bucket, q.prod.next = nextBucket(b), 0
	}
}
