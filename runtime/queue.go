package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the queues, tested with errors.Is.
var (
	// ErrPutUncertain means the session ended while a queue put was in
	// flight, so whether its items were put cannot be known any more (the
	// marker that would tell was ephemeral). Nothing else is uncertain: a
	// put that returns nil happened exactly once, and one that returns
	// another error did not happen.
	ErrPutUncertain = client.EndError("queue: put outcome unknown (session ended)")
	// ErrTakeUncertain means the session ended while an at-most-once take
	// was in flight: the items it was removing may have been removed without
	// being delivered (at-most-once allows that loss; it never duplicates).
	ErrTakeUncertain = client.EndError("queue: take outcome unknown (session ended)")
	// ErrClaimLost means an at-least-once delivery's claim is gone (its
	// session ended): Ack or Release changed nothing and the item will be
	// delivered again.
	ErrClaimLost = client.EndError("queue: claim lost")
	// ErrPriorityRange means a priority outside the queue's priorities was
	// given. Nothing was sent to ZooKeeper.
	ErrPriorityRange = errors.New("queue: priority out of range")
)

// Queue is a distributed FIFO queue of T on a znode directory, following
// the ZooKeeper guide's recipe, with at-most-once delivery: Take removes the
// item from ZooKeeper before returning it.
//
// Items are persistent (they survive their producer), encoded with the
// queue's codec, and served in the order they were put to a lone consumer.
// Several consumers spread out over chunks of consecutive items instead of
// racing for the lowest (queue_spread.go): each takes its items in order,
// but an item can be taken while an earlier one waits in another
// consumer's chunk for that consumer's next Take. A put that returns nil happened exactly
// once, a take removes each item it returns once, connection losses
// included. Items are kept in buckets of WithBucketSize items, so the queue
// can hold far more items than one getChildren reply allows, and a consumer
// costs about one listing per bucket, not one per item (see the queue
// protocol in queue_core.go).
//
// The handles of one queue on one session (same path, item and codec types
// and options) share their consumers and producers, so a handle made per
// call, as a generated Client does, costs no more than one kept: a Take
// continues from the listing an earlier Take made, and a Put deletes the
// previous Put's marker in its own multi. Takes (and Puts) running at the
// same time, on one handle or several, each use their own consumer
// (producer), as separate sessions would. Methods are safe for concurrent
// use.
type Queue[T any] struct{ q *queue[T] }

// NewQueue returns a FIFO queue handle at p whose items are encoded with
// codec. It does no I/O; the directory is created on the first Put.
func NewQueue[T any](s *Session, p Path, codec Codec[T], opts ...QueueOption) *Queue[T] {
	return &Queue[T]{newQueue(s, p, codec, queueConfig{}, opts)}
}

// Path returns the queue's directory.
func (q *Queue[T]) Path() string { return q.q.dir }

// Put appends item. It blocks for one round trip (more across a
// connection loss, which it rides out with retries). It returns nil once the
// item is in the queue, exactly once; ErrPutUncertain if the session ended
// while the put was in flight; any other error means nothing was put. ctx is
// honoured until the request is sent; once sent, Put waits for the outcome.
func (q *Queue[T]) Put(ctx context.Context, item T) error {
	_, err := q.q.put(ctx, 0, []T{item})
	return err
}

// PutAll appends items in order, in ZooKeeper multis of up to 1000 items
// (or 512 KiB): each multi is atomic and protected like Put. It returns how
// many items were put; on error, items[:n] are in the queue and the rest
// are not (except under ErrPutUncertain, where the next multi's outcome is
// unknown).
func (q *Queue[T]) PutAll(ctx context.Context, items []T) (int, error) {
	return q.q.put(ctx, 0, items)
}

// Take removes and returns the oldest item, blocking until there is one,
// ctx ends (ctx's error; nothing is removed and nothing is left behind), or
// the session ends. An item whose data cannot be decoded is left in place and
// reported with its path (an error wrapping ErrDecode); this handle skips it
// afterwards. An item returned has been removed from ZooKeeper: if the
// caller fails to process it, it is lost (at-most-once).
func (q *Queue[T]) Take(ctx context.Context) (T, error) {
	ds, err := q.q.take(ctx, 1)
	if len(ds) == 0 {
		var zero T
		return zero, err
	}
	return ds[0].Value, err
}

// TakeN removes and returns up to n of the oldest items (at least one),
// blocking like Take until there is one. The items are read concurrently and
// removed in one multi. Undecodable items are left in place and reported in
// the error, returned alongside the items that were taken.
func (q *Queue[T]) TakeN(ctx context.Context, n int) ([]T, error) {
	ds, err := q.q.take(ctx, n)
	out := make([]T, len(ds))
	for i, d := range ds {
		out[i] = d.Value
	}
	return out, err
}

// Len returns the number of items in the queue: one stat read per bucket,
// no listing of items. It does not block beyond that.
func (q *Queue[T]) Len(ctx context.Context) (int, error) { return q.q.length(ctx) }

// Stats returns the number of items and the oldest item's age. It lists
// every bucket once.
func (q *Queue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// AckQueue is a FIFO queue like Queue with at-least-once delivery: Take
// claims an item with an ephemeral claim node (<dir>/claims/<bucket>.<item>)
// and hands it over as a Delivery; the item is deleted only by Delivery.Ack.
// If the consumer's session ends before Ack, the claim vanishes and the
// item is delivered to another consumer. Items claimed by others are
// skipped; a consumer notices released claims when it runs out of items
// (it then watches the claims directory too).
type AckQueue[T any] struct{ q *queue[T] }

// NewAckQueue returns an at-least-once FIFO queue handle at p. It does no
// I/O.
func NewAckQueue[T any](s *Session, p Path, codec Codec[T], opts ...QueueOption) *AckQueue[T] {
	return &AckQueue[T]{newQueue(s, p, codec, queueConfig{ack: true}, opts)}
}

// Path returns the queue's directory.
func (q *AckQueue[T]) Path() string { return q.q.dir }

// Put appends item; see Queue.Put.
func (q *AckQueue[T]) Put(ctx context.Context, item T) error {
	_, err := q.q.put(ctx, 0, []T{item})
	return err
}

// PutAll appends items in order; see Queue.PutAll.
func (q *AckQueue[T]) PutAll(ctx context.Context, items []T) (int, error) {
	return q.q.put(ctx, 0, items)
}

// Take claims the oldest unclaimed item and returns it, blocking until there
// is one, ctx ends (ctx's error; no claim is left behind) or the session
// ends. The item stays in ZooKeeper until Ack; Release gives it back.
// Undecodable items are released, left in place and reported with their
// path (ErrDecode).
func (q *AckQueue[T]) Take(ctx context.Context) (*Delivery[T], error) {
	ds, err := q.q.take(ctx, 1)
	if len(ds) == 0 {
		return nil, err
	}
	return ds[0], err
}

// TakeN claims up to n of the oldest unclaimed items (at least one),
// blocking like Take.
func (q *AckQueue[T]) TakeN(ctx context.Context, n int) ([]*Delivery[T], error) {
	return q.q.take(ctx, n)
}

// Len returns the number of items in the queue, claimed ones included.
func (q *AckQueue[T]) Len(ctx context.Context) (int, error) { return q.q.length(ctx) }

// Stats returns the number of items, claimed ones and the oldest item's
// age. It lists every bucket once.
func (q *AckQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// Priority is the priority of a queue item: the index of its level in the
// spec's priorities list, 0 served first. Generated code declares one
// constant per level.
type Priority int

// PriorityQueue is a distributed priority queue of T, the ZooKeeper guide's
// variant of the queue recipe, with at-most-once delivery: a lower priority
// index is served first, and items of one priority are served in FIFO
// order. A newly put urgent item overtakes older lower-priority ones not yet
// taken.
//
// Each priority has its own directory, bucketed like a FIFO queue, so a
// priority queue holds any number of items, and a consumer is notified only
// when a more urgent priority it found empty gets an item (see the
// priority queue protocol in queue_prio.go). Puts are protected against
// duplicates like Queue's.
type PriorityQueue[T any] struct{ q *prioQueue[T] }

// NewPriorityQueue returns a priority queue handle at p with levels
// priorities (1 to 100). It does no I/O. opts: WithNodeACL, WithBucketSize
// (per priority), WithPriorityNames.
func NewPriorityQueue[T any](s *Session, p Path, codec Codec[T], levels int, opts ...QueueOption) *PriorityQueue[T] {
	return &PriorityQueue[T]{newPrioQueue(s, p, codec, queueConfig{priority: true, levels: levels}, opts)}
}

// Path returns the queue's directory.
func (q *PriorityQueue[T]) Path() string { return q.q.dir }

// Put adds item at priority p; see Queue.Put. A priority outside the
// queue's levels returns ErrPriorityRange.
func (q *PriorityQueue[T]) Put(ctx context.Context, p Priority, item T) error {
	_, err := q.q.put(ctx, int(p), []T{item})
	return err
}

// PutAll adds items at priority p, in order; see Queue.PutAll.
func (q *PriorityQueue[T]) PutAll(ctx context.Context, p Priority, items []T) (int, error) {
	return q.q.put(ctx, int(p), items)
}

// Take removes and returns the most urgent, oldest item; see Queue.Take.
func (q *PriorityQueue[T]) Take(ctx context.Context) (T, error) {
	ds, err := q.q.take(ctx, 1)
	if len(ds) == 0 {
		var zero T
		return zero, err
	}
	return ds[0].Value, err
}

// TakeN removes and returns up to n items in serving order; see
// Queue.TakeN.
func (q *PriorityQueue[T]) TakeN(ctx context.Context, n int) ([]T, error) {
	ds, err := q.q.take(ctx, n)
	out := make([]T, len(ds))
	for i, d := range ds {
		out[i] = d.Value
	}
	return out, err
}

// Len returns the number of items in the queue.
func (q *PriorityQueue[T]) Len(ctx context.Context) (int, error) { return q.q.length(ctx) }

// Stats returns the number of items per priority and the oldest item's age.
func (q *PriorityQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// AckPriorityQueue is a PriorityQueue with at-least-once delivery; see
// AckQueue.
type AckPriorityQueue[T any] struct{ q *prioQueue[T] }

// NewAckPriorityQueue returns an at-least-once priority queue handle at p
// with levels priorities. It does no I/O. opts: as NewPriorityQueue's.
func NewAckPriorityQueue[T any](s *Session, p Path, codec Codec[T], levels int, opts ...QueueOption) *AckPriorityQueue[T] {
	return &AckPriorityQueue[T]{newPrioQueue(s, p, codec, queueConfig{priority: true, levels: levels, ack: true}, opts)}
}

// Path returns the queue's directory.
func (q *AckPriorityQueue[T]) Path() string { return q.q.dir }

// Put adds item at priority p; see PriorityQueue.Put.
func (q *AckPriorityQueue[T]) Put(ctx context.Context, p Priority, item T) error {
	_, err := q.q.put(ctx, int(p), []T{item})
	return err
}

// PutAll adds items at priority p, in order; see Queue.PutAll.
func (q *AckPriorityQueue[T]) PutAll(ctx context.Context, p Priority, items []T) (int, error) {
	return q.q.put(ctx, int(p), items)
}

// Take claims the most urgent, oldest unclaimed item; see AckQueue.Take.
func (q *AckPriorityQueue[T]) Take(ctx context.Context) (*Delivery[T], error) {
	ds, err := q.q.take(ctx, 1)
	if len(ds) == 0 {
		return nil, err
	}
	return ds[0], err
}

// TakeN claims up to n items in serving order; see AckQueue.TakeN.
func (q *AckPriorityQueue[T]) TakeN(ctx context.Context, n int) ([]*Delivery[T], error) {
	return q.q.take(ctx, n)
}

// Len returns the number of items in the queue, claimed ones included.
func (q *AckPriorityQueue[T]) Len(ctx context.Context) (int, error) { return q.q.length(ctx) }

// Stats returns the number of items per priority, claimed ones and the
// oldest item's age.
func (q *AckPriorityQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// QueueOption configures a queue handle: WithBucketSize, WithNodeACL,
// WithPriorityNames, WithDeadLetterAfter.
type QueueOption interface{ applyQueue(*queueConfig) }

type queueOptionFunc func(*queueConfig)

func (f queueOptionFunc) applyQueue(c *queueConfig) { f(c) }

// queueConfig is what a queue handle is built with: its kind, set by its
// constructor, and its options.
// record is the spec record of the queue's directory (specguard.go).
func (c queueConfig) record() specRecord {
	r := specRecord{Kind: c.kindName(), Delivery: "at_most_once"}
	if c.priority {
		r.Levels, r.Priorities, r.Layout = c.levels, c.names, recordLevels
	}
	if c.ack {
		r.Delivery = "at_least_once"
	}
	return r
}

// kindName is the spec kind of the queue: queue, priority_queue or
// delay_queue (in its spec record and its telemetry).
func (c queueConfig) kindName() string {
	switch {
	case c.priority:
		return "priority_queue"
	case c.delay:
		return "delay_queue"
	}
	return "queue"
}

type queueConfig struct {
	handleConfig
	bucketSize int      // items per bucket (per level of a priority queue); 0: one bucket, never sealed (delay queues)
	priority   bool     // a priority queue (one FIFO queue per level, queue_prio.go)
	levels     int      // number of priorities (priority queues)
	ack        bool     // at-least-once: claim, then delete on Ack
	delay      bool     // due-prefixed names in one bucket, served once due (delay queues)
	deadAfter  int      // at-least-once: deliveries before an item moves to the dead letters; 0: never
	prefetch   int      // at-most-once FIFO: items taken at a time into the buffer (WithPrefetch)
	names      []string // priority names (WithPriorityNames), for the spec record
}

// WithBucketSize sets how many items a FIFO queue puts in one bucket before
// it starts the next (default DefaultBucketSize). Every producer and
// consumer of a queue should use the same size; a mismatch only changes
// where buckets roll over, never the order or the count. The size also
// bounds which items ride in their node names (so that a take needs no
// read, and a full bucket's listing stays under 512 KiB): items encoded in
// up to 21 bytes with the default size, up to 192 with 1,000 or fewer.
// A priority queue applies it to each priority's directory.
func WithBucketSize(n int) QueueOption {
	return queueOptionFunc(func(c *queueConfig) { c.bucketSize = n })
}

// WithPriorityNames names a priority queue's levels, most urgent first (the
// spec's priorities; generated handles pass them). They are recorded in the
// queue's directory, and a handle whose names do not start with the
// recorded ones — a level removed, renamed or moved — is refused with
// ErrSpecMismatch; appending a lowest level is accepted. Without names only
// the number of levels is checked.
func WithPriorityNames(names ...string) QueueOption {
	return queueOptionFunc(func(c *queueConfig) { c.names = slices.Clone(names) })
}

// QueueStats is a snapshot of a queue.
type QueueStats struct {
	Len        int       // items, claimed ones included
	ByPriority []int     // priority queues: items per priority index (0 first); nil for FIFO queues
	Oldest     time.Time // creation time (server clock) of the oldest item; zero when empty
	Claimed    int       // at-least-once queues: items claimed by a consumer and not yet acked
	NextDue    time.Time // delay queues: the earliest due time of an item; zero when empty
}

// tally counts the items of one bucket, in serving order, into st, and
// returns them oldest first: for a priority or delay queue the oldest item
// is the one with the lowest sequence number, whatever its priority or due
// time.
func (q *queue[T]) tally(st *QueueStats, items []qitem) []qitem {
	st.Len += len(items)
	if q.delay && len(items) > 0 {
		st.NextDue = time.UnixMilli(items[0].due).UTC()
	}
	if q.priority {
		for _, it := range items {
			if it.prio < len(st.ByPriority) {
				st.ByPriority[it.prio]++
			}
		}
	}
	if q.priority || q.delay {
		slices.SortStableFunc(items, func(a, b qitem) int { return seqCompare(a.seq, b.seq) })
	}
	return items
}

// stats lists the queue's items (each bucket once) and reads the oldest
// item's creation time.
func (q *queue[T]) stats(ctx context.Context) (_ QueueStats, err error) {
	defer q.telOp(ctx, opStats, false).end(&err)
	var st QueueStats
	if q.err != nil {
		return st, q.err
	}
	if q.priority {
		st.ByPriority = make([]int, q.levels)
	}
	bs, err := q.buckets(ctx)
	if err != nil {
		return st, err
	}
	var oldest []string // candidate item paths, oldest first
	for _, b := range bs {
		kids, err := opsOf(q.s).Children(ctx, q.bucketPath(b))
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return st, err
		}
		items := q.tally(&st, sortItems(kids))
		if oldest == nil {
			for _, it := range items {
				oldest = append(oldest, joinPath(q.bucketPath(b), it.name))
			}
		}
	}
	for _, p := range oldest {
		_, s, err := opsOf(q.s).Get(ctx, p)
		if client.IsNoNode(err) {
			continue // taken meanwhile: the next one is the oldest
		}
		if err != nil {
			return st, err
		}
		st.Oldest = time.UnixMilli(s.Ctime).UTC()
		break
	}
	if q.ack {
		kids, err := opsOf(q.s).Children(ctx, joinPath(q.dir, claimsDir))
		if err != nil && !client.IsNoNode(err) {
			return st, err
		}
		for _, k := range kids {
			// <bucket>.item-...: an item's claim; a spread consumer's chunk
			// claim (<bucket>.k<n>-<index>) claims no item by itself.
			if strings.Contains(k, "."+itemPrefix) {
				st.Claimed++
			}
		}
	}
	return st, nil
}

func (o NodeACL) applyQueue(c *queueConfig) { o.applyHandle(&c.handleConfig) }

func (o ResourceName) applyQueue(c *queueConfig) { o.applyHandle(&c.handleConfig) }
