package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// QueueOption configures a queue handle: WithBucketSize, WithNodeACL.
type QueueOption interface{ applyQueue(*queueConfig) }

type queueOptionFunc func(*queueConfig)

func (f queueOptionFunc) applyQueue(c *queueConfig) { f(c) }

type queueConfig struct {
	handleConfig
	bucketSize int
}

// WithBucketSize sets how many items a FIFO queue puts in one bucket before
// it starts the next (default DefaultBucketSize). Every producer and
// consumer of a queue should use the same size; a mismatch only changes
// where buckets roll over, never the order or the count. The size also
// bounds which items ride in their node names (so that a take needs no
// read, and a full bucket's listing stays under 512 KiB): items encoded in
// up to 21 bytes with the default size, up to 192 with 1,000 or fewer.
// Priority queues ignore it: they keep all items in one bucket.
func WithBucketSize(n int) QueueOption {
	return queueOptionFunc(func(c *queueConfig) { c.bucketSize = n })
}

// queue is the machinery shared by every queue handle: puts, the consumer's
// cached walk over buckets, at-most-once and at-least-once takes.
type queue[T any] struct {
	s        *Session
	dir      string
	err      error
	codec    Codec[T]
	acl      []zk.ACL // of created nodes; empty: the session's default
	priority bool     // one bucket, priority-prefixed names, re-list on watch
	levels   int      // number of priorities (priority queues)
	ack      bool     // at-least-once: claim, then delete on Ack
	size     int      // bucket size; 0: never seal
	inline   int      // items encoded in at most this many bytes ride in their names; -1: none

	pmu     chan struct{} // producer state
	pbucket string        // open bucket the producer puts into ("" = find it)
	pnext   int           // next sequence number expected in pbucket
	pmark   lingering     // marker of the last put, deleted by the next

	cmu         chan struct{} // consumer state
	bucket      string        // bucket the consumer walks ("" = start from the lowest)
	cache       []qitem       // cached listing of bucket, served from pos
	pos         int
	watch       <-chan zk.Event // child watch of the cached listing
	sealed      bool            // the cached listing is of a sealed bucket
	dw          <-chan zk.Event // data watch on dwBucket, set while waiting on it
	dwBucket    string
	poison      map[string]bool // undecodable items, skipped by this handle
	busy        map[string]bool // items claimed by others (at-least-once)
	pendingDrop map[string]bool // sealed buckets left with claimed items (at-least-once)
	cmark       lingering       // marker of the last take, deleted by the next
	stale       int             // items of the cached listing found taken by others
	walked      string          // buckets seen when the walk last restarted from the lowest (healBuckets)

	released atomic.Bool // a Delivery of this handle was released
}

func newQueue[T any](s *Session, p Path, codec Codec[T], priority bool, levels int, ack bool, opts []QueueOption) *queue[T] {
	cfg := queueConfig{bucketSize: DefaultBucketSize}
	for _, o := range opts {
		if o != nil {
			o.applyQueue(&cfg)
		}
	}
	q := &queue[T]{
		s: s, dir: p.String(), err: p.Err(), codec: codec, acl: cfg.acl,
		priority: priority, levels: levels, ack: ack, size: cfg.bucketSize,
		pmu: make(chan struct{}, 1), cmu: make(chan struct{}, 1),
		poison: map[string]bool{}, busy: map[string]bool{}, pendingDrop: map[string]bool{},
	}
	if priority {
		q.size = 0
	}
	q.inline = inlineLimit(q.size)
	if q.inline == 0 {
		q.inline = -1
	}
	if q.err == nil && !priority && q.size < 1 {
		q.err = fmt.Errorf("queue %s: bucket size must be >= 1, got %d", q.dir, q.size)
	}
	if q.err == nil && priority && (levels < 1 || levels > 100) {
		q.err = fmt.Errorf("queue %s: priorities must be 1..100, got %d", q.dir, levels)
	}
	return q
}

// lock takes a handle mutex, or gives up when ctx or the session ends.
func (q *queue[T]) lock(ctx context.Context, mu chan struct{}) error {
	if q.err != nil {
		return q.err
	}
	select {
	case mu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-q.s.done:
		return q.s.Err()
	}
}

func (q *queue[T]) bucketPath(b string) string { return joinPath(q.dir, b) }

// buckets lists the bucket names in order (none when the queue directory
// does not exist).
func (q *queue[T]) buckets(ctx context.Context) ([]string, error) {
	kids, err := q.s.children(ctx, q.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sortBuckets(kids), nil
}

// createNode creates a persistent node, treating "exists" as success.
func (q *queue[T]) createNode(ctx context.Context, path string, data []byte) error {
	err := q.s.retry(ctx, func() error {
		_, err := await(ctx, q.s, func() (string, error) { return q.s.create(path, data, 0, q.acl) })
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	return opError("create", path, err)
}

// nextBucket returns the name of the bucket after b.
func nextBucket(b string) string {
	i, _ := parseBucket(b)
	return bucketName(i + 1)
}

// ---- producers ----

// put encodes items and puts them in order, in multis of at most
// maxBatchOps items / maxBatchBytes. It returns how many were put.
func (q *queue[T]) put(ctx context.Context, prio int, items []T) (int, error) {
	if q.err != nil {
		return 0, q.err
	}
	if q.priority && (prio < 0 || prio >= q.levels) {
		return 0, fmt.Errorf("queue %s: %w: %d (have %d)", q.dir, ErrPriorityRange, prio, q.levels)
	}
	datas := make([][]byte, len(items))
	for i, it := range items {
		d, err := q.codec.Encode(it)
		if err != nil {
			return 0, fmt.Errorf("queue %s: encoding item %d: %w", q.dir, i, err)
		}
		datas[i] = d
	}
	if err := q.lock(ctx, q.pmu); err != nil {
		return 0, err
	}
	defer q.unlock(q.pmu, &q.pmark)
	done := 0
	for done < len(datas) {
		limit := maxBatchOps
		if q.size > 0 {
			// Fill the bucket up to its size, not past it.
			if _, err := q.openBucket(ctx); err != nil && !errors.Is(err, errRetryPut) {
				return done, err
			}
			limit = min(limit, max(1, q.size-q.pnext))
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
	if q.pbucket != "" {
		return q.pbucket, nil
	}
	bs, err := q.buckets(ctx)
	if err != nil {
		return "", err
	}
	var b string
	if len(bs) == 0 {
		if err := q.s.ensurePath(ctx, q.acl, q.dir); err != nil {
			return "", err
		}
		b = bucketName(0)
	} else {
		b = bs[len(bs)-1]
		_, st, err := q.s.get(ctx, q.bucketPath(b))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return "", errRetryPut
		case err != nil:
			return "", err
		case st.Version == 0:
			// A child's sequence number is its parent's cversion.
			q.pbucket, q.pnext = b, int(st.Cversion)
			return b, nil
		}
		b = nextBucket(b) // highest is sealed: its successor was not made yet
	}
	if err := q.createNode(ctx, q.bucketPath(b), nil); err != nil {
		return "", err
	}
	q.pbucket, q.pnext = b, 0
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
func (q *queue[T]) putChunk(ctx context.Context, prio int, datas [][]byte) error {
	marker := q.newMarker()
	// Once a multi is sent its outcome must be learnt, so the sending and
	// the recovery run detached from ctx (bounded by the retry policy and
	// the session); ctx is checked before each attempt.
	dctx := context.WithoutCancel(ctx)
	for attempt := 1; ; attempt++ {
		if err := q.s.check(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := q.openBucket(ctx)
		if errors.Is(err, errRetryPut) {
			continue
		}
		if err != nil {
			return err
		}
		bp := q.bucketPath(b)
		ops := make([]any, 0, len(datas)+3)
		ops = append(ops,
			&zk.CheckVersionRequest{Path: bp, Version: 0},
			&zk.CreateRequest{Path: marker, Flags: zk.FlagEphemeral, Acl: q.s.nodeACL(q.acl)})
		old := q.pmark.path
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
			ops = append(ops, &zk.CreateRequest{Path: name, Data: data, Flags: zk.FlagSequence, Acl: q.s.nodeACL(q.acl)})
		}
		res, err := await(dctx, q.s, func() ([]zk.MultiResponse, error) { return q.s.connMulti(ops...) })
		switch {
		case err == nil:
			q.pmark.path = marker
			q.afterPut(dctx, b, res[len(res)-1].String)
			return nil
		case IsRecoverable(err):
			ok, rerr := q.recoverMarker(dctx, marker, attempt, err, ErrPutUncertain)
			if rerr != nil {
				return rerr
			}
			if ok {
				q.pmark.path = marker // the multi deleted the old one
				return nil
			}
			continue
		case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed), errors.Is(err, zk.ErrSessionExpired), q.s.check() != nil:
			return fmt.Errorf("queue %s: %w: %w", q.dir, ErrPutUncertain, err)
		}
		switch failed := firstFailed(res); {
		case failed == 0: // bucket sealed or deleted: find the open one
			q.pbucket = ""
		case failed == 1 && errors.Is(err, zk.ErrNoNode): // no marker directory yet
			if err := q.s.ensurePath(ctx, q.acl, joinPath(q.dir, marksDir)); err != nil {
				return err
			}
		case failed == 2 && old != "" && errors.Is(err, zk.ErrNoNode):
			q.pmark.path = "" // the old marker is gone already (reaped)
		default:
			return opError("multi", bp, err)
		}
	}
}

// newMarker returns the path of a fresh marker node.
func (q *queue[T]) newMarker() string { return joinPath(joinPath(q.dir, marksDir), newGUID()) }

// recoverMarker decides after a connection loss whether a multi that
// created marker happened (after a sync, so the server has seen every write
// of the session). It reports true if it did; false with a nil error means
// it certainly did not and may be sent again. An error wrapping uncertain
// (ErrPutUncertain or ErrTakeUncertain) means it cannot be known.
func (q *queue[T]) recoverMarker(ctx context.Context, marker string, attempt int, cause, uncertain error) (bool, error) {
	if err := q.s.sleep(ctx, q.s.policy.delay(attempt)); err != nil {
		return false, fmt.Errorf("queue %s: %w: %w", q.dir, uncertain, err)
	}
	var found bool
	err := q.s.retry(ctx, func() error {
		if _, err := await(ctx, q.s, func() (string, error) { return q.s.conn.Sync(q.dir) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		ok, err := await(ctx, q.s, func() (bool, error) {
			ok, _, err := q.s.conn.Exists(marker)
			return ok, err
		})
		found = ok
		return err
	})
	if err != nil || q.s.check() != nil {
		return false, fmt.Errorf("queue %s: %w: %w", q.dir, uncertain, errors.Join(err, q.s.check()))
	}
	if found {
		q.s.log.Debug("queue multi found by its marker after a connection loss", "marker", marker)
		return true, nil
	}
	if attempt >= q.s.policy.attempts() {
		return false, opError("multi", q.dir, fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, attempt, cause))
	}
	return false, nil
}

// afterPut seals bucket b and opens the next one when the put's last item
// reached the bucket size.
func (q *queue[T]) afterPut(ctx context.Context, b, last string) {
	if q.size == 0 {
		return
	}
	seq, ok := seqOf(last)
	if !ok {
		return
	}
	q.pnext = int(seq) + 1
	if q.pnext < q.size {
		return
	}
	q.pbucket = ""
	_, err := await(ctx, q.s, func() (*zk.Stat, error) { return q.s.conn.Set(q.bucketPath(b), []byte(sealedData), 0) })
	if err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
		return // the next put finds the bucket open and tries again
	}
	if err := q.createNode(ctx, q.bucketPath(nextBucket(b)), nil); err == nil {
		q.pbucket, q.pnext = nextBucket(b), 0
	}
}

// markerLinger is how long a marker waits for the next operation of its
// handle to delete it before it is deleted on its own.
const markerLinger = 50 * time.Millisecond

// lingering is the marker of a handle's last put (or take), waiting to be
// deleted by the multi of the next one, guarded by the handle's mutex. A
// timer deletes it when no operation comes within markerLinger, so a busy
// handle spends no request on markers and an idle one keeps none.
type lingering struct {
	path  string
	timer *time.Timer
}

// unlock releases a handle mutex taken by lock, first arming the deletion
// of the pending marker m of that side, if any.
func (q *queue[T]) unlock(mu chan struct{}, m *lingering) {
	if m.path != "" {
		if m.timer == nil {
			m.timer = time.AfterFunc(markerLinger, func() { q.flushMarker(mu, m) })
		} else {
			m.timer.Reset(markerLinger)
		}
	}
	<-mu
}

// flushMarker deletes the pending marker m unless the mutex is busy: its
// holder will delete it in its multi, or arm the timer again.
func (q *queue[T]) flushMarker(mu chan struct{}, m *lingering) {
	select {
	case mu <- struct{}{}:
	default:
		return
	}
	path := m.path
	m.path = ""
	<-mu
	if path != "" {
		q.dropMarker(path)
	}
}

// dropMarker deletes a marker in the background (it is ephemeral: if
// this fails, the session's end removes it).
func (q *queue[T]) dropMarker(marker string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := q.s.delete(ctx, marker, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && q.s.check() == nil {
			q.s.log.Debug("could not remove put marker", "path", marker, "err", err)
		}
	}()
}

// firstFailed returns the index of the op that failed a multi, or -1. The
// server reports the ops before it as successful and those after it as
// rolled back, so it is the first error.
func firstFailed(res []zk.MultiResponse) int {
	for i, r := range res {
		if r.Error != nil {
			return i
		}
	}
	return -1
}

// ---- length ----

// length sums the children of every bucket (one stat read per bucket).
func (q *queue[T]) length(ctx context.Context) (int, error) {
	if q.err != nil {
		return 0, q.err
	}
	bs, err := q.buckets(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range bs {
		_, st, err := q.s.get(ctx, q.bucketPath(b))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n += int(st.NumChildren)
	}
	return n, nil
}

// ---- contention between consumers ----

// raced records a race lost to another consumer: an item of the listing
// was taken by someone else. Consumers keep taking the lowest item they
// know of (so an item is taken only after every earlier one was: an
// end-of-work marker put last is taken last); what a lost race costs is
// bounded by refreshing a listing proved stale.
func (q *queue[T]) raced() { q.stale++ }

// staleCache reports whether listing the bucket again is cheaper than
// walking the rest of the cached listing: every item another consumer took
// costs a wasted read when this one reaches it, while a listing costs one
// request whose reply holds the remaining names (about 25 bytes each). So a
// short listing is refreshed as soon as it proved stale, a long one only
// after a proportionate number of wasted reads.
func (q *queue[T]) staleCache() bool {
	return q.stale > 0 && q.stale*staleRatio >= len(q.cache)-q.pos
}

// staleRatio is how many cached names one wasted read is worth.
const staleRatio = 128
