package runtime

import (
	"context"
	"fmt"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// peek returns the oldest item (at least once: the oldest unclaimed one),
// the one a lone consumer's next Take gets (a consumer spread out over
// chunks, queue_spread.go, takes its own chunk's first), without taking or
// claiming it: it lists the buckets from
// the lowest and reads the first item still there. ok is false when there
// is none. It does not touch the handle's consumer state. A prefetching
// handle's next Take gets the oldest item of its buffer, if any: that one.
func (q *queue[T]) peek(ctx context.Context) (v T, ok bool, err error) {
	defer q.telOp(ctx, opPeek, false).end(&err)
	if q.err != nil {
		return v, false, q.err
	}
	if v, ok := q.peekBuffer(ctx); ok {
		return v, true, nil
	}
	if err := checkSpec(ctx, q.s, q.dir, q.record()); err != nil {
		return v, false, err
	}
	claimed := map[string]bool{}
	if q.ack {
		kids, err := opsOf(q.s).Children(ctx, joinPath(q.dir, claimsDir))
		if err != nil && !client.IsNoNode(err) {
			return v, false, err
		}
		for _, k := range kids {
			claimed[k] = true
		}
	}
	bs, err := q.buckets(ctx)
	if err != nil {
		return v, false, err
	}
	for _, b := range bs {
		bp := q.bucketPath(b)
		kids, err := opsOf(q.s).Children(ctx, bp)
		if client.IsNoNode(err) {
			continue // drained and dropped meanwhile
		}
		if err != nil {
			return v, false, err
		}
		for _, it := range sortItems(kids) {
			p := joinPath(bp, it.name)
			if claimed[q.claimName(p)] {
				continue
			}
			data := it.inline
			if !it.hasIn {
				d, _, err := opsOf(q.s).Get(ctx, p)
				if client.IsNoNode(err) {
					continue // taken meanwhile: the next one is the head
				}
				if err != nil {
					return v, false, err
				}
				data = d
			}
			if v, err = q.codec.Decode(data); err != nil {
				return v, false, fmt.Errorf("queue item %s: %w", p, err)
			}
			return v, true, nil
		}
	}
	return v, false, nil
}

// Peek returns the oldest item without taking it; ok is false when the
// queue is empty. It does not block and does not disturb this handle's
// Takes. An undecodable head is reported with its path (ErrDecode).
func (q *Queue[T]) Peek(ctx context.Context) (item T, ok bool, err error) { return q.q.peek(ctx) }

// Peek returns the oldest unclaimed item (the one a lone consumer's next
// Take would claim) without claiming it; see Queue.Peek.
func (q *AckQueue[T]) Peek(ctx context.Context) (item T, ok bool, err error) { return q.q.peek(ctx) }

// Peek returns the most urgent, oldest item without taking it; see
// Queue.Peek.
func (q *PriorityQueue[T]) Peek(ctx context.Context) (item T, ok bool, err error) {
	return q.q.peek(ctx)
}

// Peek returns the most urgent, oldest unclaimed item without claiming it;
// see Queue.Peek.
func (q *AckPriorityQueue[T]) Peek(ctx context.Context) (item T, ok bool, err error) {
	return q.q.peek(ctx)
}
