package runtime

import (
	"context"
	"fmt"
	"time"
)

// DelayQueue is a distributed delay queue of T on a znode directory, with
// at-most-once delivery: every item is put with a due time, and Take
// returns an item only once its due time has passed, earliest due first
// (items due at the same millisecond in the order they were put).
//
// Which clock decides "due": the producer writes the due time it was given
// (a time.Time, so an absolute instant, stored as a Unix millisecond rounded
// up) in the item's node name, and the consumer compares it with its own
// wall clock. An item is never taken before its due time by the
// consumer's clock; if the consumer's clock is ahead of the producer's by
// d, an item put "due in 10s" is taken up to d early by the producer's
// clock (and late if it is behind). Keep clocks in sync (NTP) or put due
// times well apart compared with the skew. ZooKeeper's clock plays no
// part.
//
// A waiting Take does not poll: it sets a timer to the first item's due
// time and keeps a child watch on the directory, which wakes it when an
// item due earlier arrives. Like a priority queue, all items live in one
// directory (due order needs one listing), so a delay queue holds at most
// what one getChildren reply allows (about 29,000 items with the default
// jute.maxbuffer), and a consumer lists the directory again after every
// change to it. Puts and takes are protected against loss and duplicates
// like Queue's (a GUID-named marker in the same multi).
//
// The handles of one delay queue on one session share their consumers and
// producers, as Queue's do. Methods are safe for concurrent use.
type DelayQueue[T any] struct{ q *queue[T] }

// NewDelayQueue returns a delay queue handle at p whose items are encoded
// with codec. It does no I/O. opts: WithNodeACL (WithBucketSize is
// ignored).
func NewDelayQueue[T any](s *Session, p Path, codec Codec[T], opts ...QueueOption) *DelayQueue[T] {
	return &DelayQueue[T]{newQueue(s, p, codec, queueConfig{delay: true}, opts)}
}

// Path returns the queue's directory.
func (q *DelayQueue[T]) Path() string { return q.q.dir }

// Put adds item, to be taken once due has passed (a due time already past
// makes it due at once). It returns as Queue.Put does: nil once the item is
// in the queue, exactly once, across connection losses too.
func (q *DelayQueue[T]) Put(ctx context.Context, item T, due time.Time) error {
	_, err := q.q.putDue(ctx, due, []T{item})
	return err
}

// PutAll adds items, all due at due, in order; see Queue.PutAll.
func (q *DelayQueue[T]) PutAll(ctx context.Context, items []T, due time.Time) (int, error) {
	return q.q.putDue(ctx, due, items)
}

// Take removes and returns the item due first once its due time has passed
// by this process's clock, blocking until then, until ctx ends (ctx's
// error; nothing is removed and nothing is left behind) or the session
// ends. Otherwise as Queue.Take.
func (q *DelayQueue[T]) Take(ctx context.Context) (T, error) {
	ds, err := q.q.take(ctx, 1)
	if len(ds) == 0 {
		var zero T
		return zero, err
	}
	return ds[0].Value, err
}

// TakeN removes and returns up to n items that are due, earliest due first,
// blocking like Take until there is one.
func (q *DelayQueue[T]) TakeN(ctx context.Context, n int) ([]T, error) {
	ds, err := q.q.take(ctx, n)
	out := make([]T, len(ds))
	for i, d := range ds {
		out[i] = d.Value
	}
	return out, err
}

// Peek returns the item due first, due or not, without taking it; ok is
// false when the queue is empty. It does not block and does not disturb
// this handle's Takes.
func (q *DelayQueue[T]) Peek(ctx context.Context) (item T, ok bool, err error) { return q.q.peek(ctx) }

// Len returns the number of items in the queue, due or not.
func (q *DelayQueue[T]) Len(ctx context.Context) (int, error) { return q.q.length(ctx) }

// Stats returns the number of items, the oldest item's age and the earliest
// due time.
func (q *DelayQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// AckDelayQueue is a DelayQueue with at-least-once delivery, as AckQueue
// is to Queue: Take claims the item due first (once due) and hands it over
// as a Delivery; Ack consumes it, Release gives it back (it is due at once
// for the next consumer), and a consumer whose session ends before Ack
// releases it.
type AckDelayQueue[T any] struct{ q *queue[T] }

// NewAckDelayQueue returns an at-least-once delay queue handle at p. It does
// no I/O. opts: WithNodeACL, WithDeadLetterAfter (an item delivered that
// often without an ack moves to DeadLetters, as for AckQueue).
func NewAckDelayQueue[T any](s *Session, p Path, codec Codec[T], opts ...QueueOption) *AckDelayQueue[T] {
	return &AckDelayQueue[T]{newQueue(s, p, codec, queueConfig{delay: true, ack: true}, opts)}
}

// Path returns the queue's directory.
func (q *AckDelayQueue[T]) Path() string { return q.q.dir }

// Put adds item, due at due; see DelayQueue.Put.
func (q *AckDelayQueue[T]) Put(ctx context.Context, item T, due time.Time) error {
	_, err := q.q.putDue(ctx, due, []T{item})
	return err
}

// PutAll adds items, all due at due, in order; see Queue.PutAll.
func (q *AckDelayQueue[T]) PutAll(ctx context.Context, items []T, due time.Time) (int, error) {
	return q.q.putDue(ctx, due, items)
}

// Take claims the unclaimed item due first once it is due, blocking until
// then; see DelayQueue.Take and AckQueue.Take.
func (q *AckDelayQueue[T]) Take(ctx context.Context) (*Delivery[T], error) {
	ds, err := q.q.take(ctx, 1)
	if len(ds) == 0 {
		return nil, err
	}
	return ds[0], err
}

// TakeN claims up to n due items, earliest due first; see AckQueue.TakeN.
func (q *AckDelayQueue[T]) TakeN(ctx context.Context, n int) ([]*Delivery[T], error) {
	return q.q.take(ctx, n)
}

// Peek returns the unclaimed item due first, due or not, without claiming
// it; see DelayQueue.Peek.
func (q *AckDelayQueue[T]) Peek(ctx context.Context) (item T, ok bool, err error) {
	return q.q.peek(ctx)
}

// Len returns the number of items in the queue, claimed ones included.
func (q *AckDelayQueue[T]) Len(ctx context.Context) (int, error) { return q.q.length(ctx) }

// Stats returns the number of items, claimed ones, the oldest item's age
// and the earliest due time.
func (q *AckDelayQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// Consume is AckQueue.Consume for a delay queue: items come once due,
// earliest due first.
func (q *AckDelayQueue[T]) Consume(ctx context.Context, fn func(ctx context.Context, item T) error, opts ...ConsumeOption) error {
	return consume(ctx, q.q.s, q.Take, fn, opts)
}

// putDue puts items due at due: the put of a delay queue, whose key (the
// put's priority argument) is the due Unix millisecond.
func (q *queue[T]) putDue(ctx context.Context, due time.Time, items []T) (int, error) {
	ms := dueMillis(due)
	if int64(int(ms)) != ms { // a 32-bit int
		return 0, fmt.Errorf("queue %s: due time %v does not fit this platform's int", q.dir, due)
	}
	return q.put(ctx, int(ms), items)
}
