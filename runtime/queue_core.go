package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Queue protocol
//
// Items are persistent sequential nodes in numbered buckets (the layout is
// in queue_layout.go). A consumer lists its current bucket once, with a
// child watch, and takes items from that cached listing (lowest-first
// within the chunk it claimed, queue_spread.go; a prefetching or
// at-least-once consumer as its own notes say) without listing again until
// it is used up (refill, takeCached); an item
// another consumer took first is skipped, and a listing proved stale by
// such lost races is refreshed early (staleCache). A priority queue's
// levels are such queues, whose takes return errLevelEmpty instead of
// waiting (queue_prio.go).
//
// Each put is one multi that checks its bucket is open, creates the items
// and an ephemeral marker named by a fresh GUID (putOnce): after a
// connection loss the marker, not the items (which may be consumed
// already), tells whether the put happened (markedMulti), so a retried put
// never duplicates an item. An at-most-once take deletes its items in one
// multi with a marker the same way (deleteOnce). A marker lingers until the
// next operation of its side deletes it in its own multi, or markerLinger
// passes. An at-least-once take creates an ephemeral claim per item
// instead (queue_ack.go).

// queue is one machine of a queue: puts, the consumer's cached walk over
// buckets, at-most-once and at-least-once takes. It is one producer and one
// consumer, each with its own state, mutex and pending marker; the
// session's handles of the queue share a pool of machines (queue_pool.go).
type queue[T any] struct {
	s     *Session
	dir   string
	err   error
	codec Codec[T]
	queueConfig
	inline int    // items encoded in at most this many bytes ride in their names; -1: none
	top    string // a priority queue's level: the priority queue's directory

	prod producer
	cons consumer

	acks ackMarks // markers of this machine's Acks (queue_ack.go)

	pb *prefetchBuf[T] // prefetched items, served first; shared by the session's handles of the queue (queue_prefetch.go)

	pool *machinePool[*queue[T]] // the session's machines of this queue; nil for a priority queue's level
}

// side is what the producer and the consumer of a handle each have: a
// mutex that serves their operations one at a time, and the marker of the
// last one.
type side struct {
	mu   chan struct{} // taken by lock, released by unlock
	mark lingering     // marker of the last put (take), deleted by the next
}

// producer is the state of a handle's puts.
type producer struct {
	side
	bucket string // open bucket puts go into ("" = find it)
	next   int    // next sequence number expected in bucket
}

// consumer is the state of a handle's takes: its walk over the buckets and
// what it learnt about items on the way.
type consumer struct {
	side
	bucket      string          // bucket the consumer walks ("" = start from the lowest)
	cache       []qitem         // cached listing of bucket, served from pos
	pos         int             // next item of cache to serve
	watch       <-chan zk.Event // child watch of the cached listing
	sealed      bool            // the cached listing is of a sealed bucket
	dw          <-chan zk.Event // data watch on dwBucket, set while waiting on it
	dwBucket    string
	poison      map[string]bool   // undecodable items, skipped by this handle
	busy        map[string]string // items claimed by others (at-least-once, prefetch), to their claims' names
	pendingDrop map[string]bool   // sealed buckets left with claimed items (at-least-once)
	stale       int               // items of the cached listing found taken by others
	walked      string            // buckets seen when the walk last restarted from the lowest (healBuckets)
	released    atomic.Bool       // a Delivery of this handle was released
	noWait      bool              // a priority queue's level: return errLevelEmpty instead of waiting
	waits       []<-chan zk.Event // noWait: what the last take would have waited on
	plain       bool              // noWait: the last listing had items; list the next without a watch
	spread      spread            // a spread consumer's chunk (queue_spread.go)
}

// newQueue returns the machinery of a queue handle of the kind cfg says
// (ack, delay), configured further by opts: the first machine of the
// session's pool for that queue (queue_pool.go), whose Puts and Takes
// borrow a machine of the pool.
func newQueue[T any](s *Session, p Path, codec Codec[T], cfg queueConfig, opts []QueueOption) *queue[T] {
	q := buildQueue(s, p, codec, cfg, opts)
	if q.err != nil {
		return q
	}
	return pooled(s, q.dir, codec, q.queueConfig, func(pool *machinePool[*queue[T]]) *queue[T] {
		m := buildQueue(s, p, codec, cfg, opts)
		m.pool = pool
		return m
	})
}

// buildQueue returns one machine of a queue of the kind cfg says,
// configured further by opts, outside any pool (a priority queue's levels
// belong to their priority queue's machine).
func buildQueue[T any](s *Session, p Path, codec Codec[T], cfg queueConfig, opts []QueueOption) *queue[T] {
	cfg.bucketSize = DefaultBucketSize
	for _, o := range opts {
		if o != nil {
			o.applyQueue(&cfg)
		}
	}
	if cfg.delay {
		cfg.bucketSize = 0
	}
	q := &queue[T]{s: s, dir: p.String(), err: p.Err(), codec: codec, queueConfig: cfg,
		prod: producer{side: side{mu: make(chan struct{}, 1)}},
		cons: consumer{side: side{mu: make(chan struct{}, 1)},
			poison: map[string]bool{}, busy: map[string]string{}, pendingDrop: map[string]bool{}},
	}
	if q.prefetching() {
		q.pb = sharedBuf[T](s, q.dir)
	}
	q.inline = inlineLimit(q.bucketSize)
	if q.inline == 0 {
		q.inline = -1
	}
	if q.err == nil && !q.delay && q.bucketSize < 1 {
		q.err = fmt.Errorf("queue %s: bucket size must be >= 1, got %d", q.dir, q.bucketSize)
	}
	return q
}

func (q *queue[T]) bucketPath(b string) string { return joinPath(q.dir, b) }

// telOp starts the telemetry of operation o. A priority queue's level
// records its deliveries' operations (own) as the priority queue's, and
// leaves its puts and takes to the priority queue.
func (q *queue[T]) telOp(ctx context.Context, o op, own bool) span {
	if q.top != "" && !own {
		return span{}
	}
	kind, path := q.telKind()
	return telOf(q.s).begin(ctx, o, kind, q.name, path)
}

// telKind is the kind and path the queue's telemetry records: a priority
// queue's level records as the priority queue.
func (q *queue[T]) telKind() (kind, path string) {
	if q.top != "" {
		return "priority_queue", q.top
	}
	return q.kindName(), q.dir
}

// buckets lists the bucket names in order (none when the queue directory
// does not exist).
func (q *queue[T]) buckets(ctx context.Context) ([]string, error) {
	kids, err := opsOf(q.s).Children(ctx, q.dir)
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
	_, err := opsOf(q.s).CreateIfAbsent(ctx, path, data, 0, q.acl)
	return err
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
		_, st, err := opsOf(q.s).Get(ctx, q.bucketPath(b))
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

// lock takes the mutex of side sd, or gives up when ctx or the session
// ends (acquire).
func (q *queue[T]) lock(ctx context.Context, sd *side) error {
	if q.err != nil {
		return q.err
	}
	return acquire(ctx, q.s, sd.mu)
}

// acquire takes mu, a mutex held by sending to it, or gives up when ctx or
// s ends. An end wins over a free mutex, ctx's over the session's, not
// select's random pick among them, so a seed's replay takes the same
// branch (a prefetching consumer's Take with a cancelled ctx on an ended
// session went on to send, or not: queue-prefetch
// seed=764337939,procs=4,ops=30,rate=0.03,chaos=4, 2 histories in 20).
func acquire(ctx context.Context, s *Session, mu chan struct{}) error {
	if err := ended(ctx, s); err != nil {
		return err
	}
	select {
	case mu <- struct{}{}:
		if err := ended(ctx, s); err != nil { // they came at one instant
			<-mu
			return err
		}
		return nil
	case <-ctx.Done():
	case <-s.Done():
	}
	return ended(ctx, s)
}

// unlock releases the mutex of side sd, taken by lock, first arming the
// deletion of its pending marker, if any.
func (q *queue[T]) unlock(sd *side) {
	if m := &sd.mark; m.path != "" {
		if m.timer == nil {
			m.timer = time.AfterFunc(markerLinger, func() { q.flushMarker(sd) })
		} else {
			m.timer.Reset(markerLinger)
		}
	}
	<-sd.mu
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

// flushMarker deletes the pending marker of side sd unless its mutex is
// busy: its holder will delete it in its multi, or arm the timer again.
func (q *queue[T]) flushMarker(sd *side) {
	select {
	case sd.mu <- struct{}{}:
	default:
		return
	}
	path := sd.mark.path
	sd.mark.path = ""
	<-sd.mu
	if path != "" {
		q.dropMarker(path)
	}
}

// dropMarker deletes a marker in the background (it is ephemeral: if
// this fails, the session's end removes it).
func (q *queue[T]) dropMarker(marker string) {
	opsOf(q.s).Spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
		defer cancel()
		if err := opsOf(q.s).Delete(ctx, marker, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && q.s.Err() == nil {
			opsOf(q.s).Log().Debug("could not remove put marker", "path", marker, "err", err)
		}
	})
}

// flushWhileWaiting gives up, markerLinger into a wait of a Take (which
// holds the consumer's mutex, so the marker's own timer cannot), the
// consumer's pending marker and its chunk claim (queue_spread.go): a
// consumer waiting for items keeps neither. The returned stop ends that
// before the Take touches its state again.
func (q *queue[T]) flushWhileWaiting() (stop func()) {
	c := &q.cons
	if c.mark.path == "" && c.spread.own == "" {
		return func() {}
	}
	done := make(chan struct{})
	t := time.AfterFunc(markerLinger, func() {
		defer close(done)
		if p := c.mark.path; p != "" {
			c.mark.path = ""
			q.dropMarker(p)
		}
		q.releaseOwn()
	})
	return func() {
		if !t.Stop() {
			<-done
		}
	}
}

// newMarker returns the path of a fresh marker node.
func (q *queue[T]) newMarker() string {
	return joinPath(joinPath(q.dir, marksDir), opsOf(q.s).Rand().NewGUID())
}

// markedMulti runs a queue multi that creates marker — a put's or a take's,
// m being the pending marker of that side — in RetryUncertain. After a
// connection loss the marker settles whether the multi happened: it did if
// the marker exists, and m is then the marker (the multi deleted the
// previous one); it did not if the marker is missing, and it is sent again.
// When that cannot be known, because the marker cannot be read or the
// session ends meanwhile, the error wraps uncertain (ErrPutUncertain or
// ErrTakeUncertain).
func (q *queue[T]) markedMulti(ctx context.Context, marker string, m *lingering, uncertain error, attempt func() (client.Outcome, error)) error {
	return opsOf(q.s).RetryUncertain(ctx, client.UncertainWrite{Op: "multi", Path: q.dir,
		Attempt: func(int) (client.Outcome, error) { return attempt() },
		Settle: func(ctx context.Context) (client.Outcome, error) {
			found, err := q.findMarker(ctx, marker)
			switch {
			case err != nil:
				return client.OutcomeKnown, fmt.Errorf("queue %s: %w: %w", q.dir, uncertain, err)
			case found:
				m.path = marker // the multi deleted the old one
				return client.OutcomeKnown, nil
			}
			return client.OutcomeResend, nil
		},
		Interrupted: func(err error) error { return fmt.Errorf("queue %s: %w: %w", q.dir, uncertain, err) },
	})
}

// findMarker reports whether marker exists, after a sync (so the server has
// seen every write of the session). It fails when the session has ended or
// ctx ends, not before (client.Ops.RetryAlive): a quorum lost for longer
// than the retry policy's attempts made takes and puts "uncertain" while
// their sessions lived on (TestQueueEnsembleFailover, 8 s without quorum).
func (q *queue[T]) findMarker(ctx context.Context, marker string) (bool, error) {
	var found bool
	err := opsOf(q.s).RetryAlive(ctx, func() error {
		if _, err := client.Await(ctx, q.s, func() (string, error) { return q.s.Conn().Sync(q.dir) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		ok, err := client.Await(ctx, q.s, func() (bool, error) {
			ok, _, err := q.s.Conn().Exists(marker)
			return ok, err
		})
		found = ok
		return err
	})
	if err != nil || q.s.Err() != nil {
		return false, client.JoinErrors(err, q.s.Err())
	}
	if found {
		opsOf(q.s).Log().Debug("queue multi found by its marker after a connection loss", "marker", marker)
	}
	return found, nil
}
