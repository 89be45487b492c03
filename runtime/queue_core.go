package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

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

// nextBucket returns the name of the bucket after b.
func nextBucket(b string) string {
	i, _ := parseBucket(b)
	return bucketName(i + 1)
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

// newMarker returns the path of a fresh marker node.
func (q *queue[T]) newMarker() string { return joinPath(joinPath(q.dir, marksDir), newGUID()) }

// markedMulti runs a queue multi that creates marker — a put's or a take's,
// m being the pending marker of that side — in retryUncertain. After a
// connection loss the marker settles whether the multi happened: it did if
// the marker exists, and m is then the marker (the multi deleted the
// previous one); it did not if the marker is missing, and it is sent again.
// When that cannot be known, because the marker cannot be read or the
// session ends meanwhile, the error wraps uncertain (ErrPutUncertain or
// ErrTakeUncertain).
func (q *queue[T]) markedMulti(ctx context.Context, marker string, m *lingering, uncertain error, attempt func() (outcome, error)) error {
	return q.s.retryUncertain(ctx, uncertainWrite{op: "multi", path: q.dir,
		attempt: func(int) (outcome, error) { return attempt() },
		settle: func() (outcome, error) {
			found, err := q.findMarker(ctx, marker)
			switch {
			case err != nil:
				return outcomeKnown, fmt.Errorf("queue %s: %w: %w", q.dir, uncertain, err)
			case found:
				m.path = marker // the multi deleted the old one
				return outcomeKnown, nil
			}
			return outcomeResend, nil
		},
		interrupted: func(err error) error { return fmt.Errorf("queue %s: %w: %w", q.dir, uncertain, err) },
	})
}

// findMarker reports whether marker exists, after a sync (so the server has
// seen every write of the session). It fails when the session has ended.
func (q *queue[T]) findMarker(ctx context.Context, marker string) (bool, error) {
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
		return false, errors.Join(err, q.s.check())
	}
	if found {
		q.s.log.Debug("queue multi found by its marker after a connection loss", "marker", marker)
	}
	return found, nil
}
