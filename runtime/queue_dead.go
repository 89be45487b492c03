package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Dead letters of at-least-once queues:
//
//	<dir>/attempts/<bucket>.<item>      persistent; data version + 1 = deliveries so far
//	<dir>/dead/<bucket>.<item>          persistent; the item's encoding
//	<dir>/dead-reasons/<bucket>.<item>  persistent; why it died, when known
//
// A claim (queue_ack.go) creates the item's attempts node, or bumps its data
// version, in the claim's own multi, so the count survives the consumers'
// sessions. With WithDeadLetterAfter(n), a claim that finds the item
// delivered n times already, or a Release of its n-th delivery, moves the
// item: one multi deletes the item, its claim and its attempts node and
// creates its dead letter (and, when the reason is known, its reason node
// beside, so that the dead letter's data stays the item's encoding for
// Requeue and for zkgen versions that know no reasons), so the item is in
// exactly one of the two places.
// Only the claim's holder moves or acks an item, so a move retried after a
// connection loss that finds the item gone was done by the lost attempt.
// Requeue puts a dead letter back like a Put, in a multi that also deletes
// the dead letter (and is settled by the put's marker after a connection
// loss); Discard deletes it.

const (
	attemptsDir    = "attempts"
	deadDir        = "dead"
	deadReasonsDir = "dead-reasons"
)

// WithDeadLetterAfter makes an at-least-once queue move an item delivered n
// times without an ack to its dead letters (<dir>/dead, listed by
// DeadLetters) instead of delivering it again: the n-th delivery's Release
// moves it, and so does the next Take that claims it after its n-th
// consumer's session ended. 0 (the default) never moves items. Every
// consumer of a queue should use the same n (each applies its own).
// At-most-once queues ignore it.
func WithDeadLetterAfter(n int) QueueOption {
	return queueOptionFunc(func(c *queueConfig) { c.deadAfter = n })
}

// moveDead moves the claimed item at path, encoded as data, to the dead
// letters: one multi deletes the item, its claim and its attempts node and
// creates <dir>/dead/<bucket>.<item> (and its reason node, if reason is
// not empty). It runs detached from ctx, like the claim it ends.
func (q *queue[T]) moveDead(ctx context.Context, path, claim string, data []byte, reason string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
	defer cancel()
	dead := joinPath(joinPath(q.dir, deadDir), baseName(claim))
	ops := []any{
		&zk.DeleteRequest{Path: path, Version: -1},
		&zk.DeleteRequest{Path: claim, Version: -1},
		&zk.DeleteRequest{Path: q.attemptsPath(claim), Version: -1},
		&zk.CreateRequest{Path: dead, Data: data, Acl: opsOf(q.s).NodeACL(q.acl)},
	}
	if reason != "" {
		ops = append(ops, &zk.CreateRequest{Path: q.reasonPath(dead), Data: []byte(reason), Acl: opsOf(q.s).NodeACL(q.acl)})
	}
	retried := false
	for {
		res, lost, err := opsOf(q.s).MultiRetried(ctx, ops...)
		retried = retried || lost
		if err == nil {
			q.deadLettered(path)
			return nil
		}
		i, _ := client.FailedOp(res)
		switch {
		case retried && i >= 0 && i < 3 && errors.Is(err, zk.ErrNoNode):
			// Only the claim's holder moves a claimed item: the lost
			// attempt did it.
			q.deadLettered(path)
			return nil
		case (i == 3 || i == 4) && errors.Is(err, zk.ErrNoNode):
			parent := joinPath(q.dir, deadDir)
			if i == 4 {
				parent = joinPath(q.dir, deadReasonsDir)
			}
			if err := opsOf(q.s).EnsurePath(ctx, q.acl, parent); err != nil {
				return err
			}
			continue
		case i >= 0 && i < 3 && errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("queue %s: moving to the dead letters: %w (%w)", path, ErrClaimLost, err)
		case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed):
			// The claim is gone with the session: the item is moved, or
			// still queued and moved by the next consumer that claims it.
			return fmt.Errorf("queue %s: move to the dead letters outcome unknown: %w", path, err)
		}
		return client.OpError("dead-letter", path, err)
	}
}

// reasonPath is the reason node of the dead letter at dead.
func (q *queue[T]) reasonPath(dead string) string {
	return joinPath(joinPath(q.dir, deadReasonsDir), baseName(dead))
}

// deadLettered is called once per item this handle moved to the dead
// letters: it logs it and counts it (zkgen.queue.dead_lettered).
func (q *queue[T]) deadLettered(path string) {
	opsOf(q.s).Log().Info("queue item moved to the dead letters", "path", path, "after", q.deadAfter)
	kind, dir := q.telKind()
	telOf(q.s).deadLettered(kind, q.name, dir)
}

// DeadLetter is an item of an at-least-once queue that was delivered too
// many times without an ack (see WithDeadLetterAfter) and now waits in the
// queue's dead letters for Requeue or Discard.
type DeadLetter[T any] struct {
	// Value is the decoded item; the zero value when Err is set.
	Value T
	// Err wraps ErrDecode when the item cannot be decoded (Discard still
	// works; Requeue puts the same bytes back).
	Err error
	// Moved is when the item was moved to the dead letters (server clock).
	Moved time.Time
	// Reason is why it died, when known: the error its last consumer gave
	// (Delivery.Nack, or Consume's function), or that its last consumer's
	// session ended before an ack or a release. Empty when the consumer
	// released it without a reason, or a zkgen that keeps none moved it.
	Reason string

	q      *queue[T]
	node   string
	reason string // its reason node, "" when it has none
	item   qitem
	data   []byte
	once   settleOnce
}

// Node returns the dead letter's znode path.
func (d *DeadLetter[T]) Node() string { return d.node }

// Requeue puts the item back at the tail of the queue (at its priority, for
// a priority queue; at its original due time for a delay queue, which has
// passed, so it is due at once and served before items due later) as a new
// item, whose Attempt starts again at 1. One
// multi creates the item and deletes the dead letter, so after Requeue
// returns nil the item is queued once and no longer a dead letter, a
// connection loss included (settled like Put's, ErrPutUncertain if the
// session ends meanwhile). It returns ErrNotHeld when the dead letter is
// gone (requeued or discarded already, here or by another handle).
func (d *DeadLetter[T]) Requeue(ctx context.Context) (err error) {
	defer d.q.telOp(ctx, opRequeue, true).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	q := d.q
	if q.priority && d.item.prio >= q.levels {
		d.undo()
		return fmt.Errorf("queue dead letter %s: %w: %d (have %d)", d.node, ErrPriorityRange, d.item.prio, q.levels)
	}
	if err := guardSpec(ctx, q.s, q.dir, q.acl, q.record()); err != nil {
		d.undo()
		return err
	}
	if err := q.lock(ctx, &q.prod.side); err != nil {
		d.undo()
		return err
	}
	defer q.unlock(&q.prod.side)
	key := d.item.prio
	if q.delay {
		// Back at its own due time, which has passed: due at once, served
		// in due order among the items due already.
		key = int(d.item.due)
		if int64(key) != d.item.due { // a 32-bit int
			d.undo()
			return fmt.Errorf("queue dead letter %s: due time %d does not fit this platform's int", d.node, d.item.due)
		}
	}
	extra := []any{&zk.DeleteRequest{Path: d.node, Version: -1}}
	if d.reason != "" {
		extra = append(extra, &zk.DeleteRequest{Path: d.reason, Version: -1})
	}
	err = q.putChunk(ctx, key, [][]byte{d.data}, extra...)
	if errors.Is(err, errExtraFailed) {
		return fmt.Errorf("queue dead letter %s: %w (requeued or discarded already)", d.node, ErrNotHeld)
	}
	if err != nil && !errors.Is(err, ErrPutUncertain) {
		d.undo()
	}
	return err
}

// Discard deletes the dead letter: the item is gone for good. It returns
// ErrNotHeld when the dead letter is gone (requeued or discarded already).
func (d *DeadLetter[T]) Discard(ctx context.Context) (err error) {
	defer d.q.telOp(ctx, opDiscard, true).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	// A retry after a connection loss that finds it gone counts as done.
	if d.reason != "" {
		err = d.q.discardWithReason(ctx, d.node, d.reason)
	} else {
		err = opsOf(d.q.s).Delete(ctx, d.node, -1)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("queue dead letter %s: %w (requeued or discarded already)", d.node, ErrNotHeld)
	}
	d.undo()
	return err
}

// discardWithReason deletes a dead letter and its reason node in one
// multi. As with a plain delete, a retry after a connection loss that
// finds the dead letter gone counts as done; missing at the first attempt,
// it is ErrNoNode.
func (q *queue[T]) discardWithReason(ctx context.Context, node, reason string) error {
	_, err := opsOf(q.s).DeleteAll(ctx, node, reason)
	return err
}

func (d *DeadLetter[T]) finish() error { return d.once.settle("queue dead letter", d.node) }

func (d *DeadLetter[T]) undo() { d.once.undo() }

// deadLetters lists the queue's dead letters, oldest move first.
func (q *queue[T]) deadLetters(ctx context.Context) (_ []*DeadLetter[T], err error) {
	defer q.telOp(ctx, opDeadLetters, false).end(&err)
	if q.err != nil {
		return nil, q.err
	}
	// The reasons are listed first: a dead letter and its reason are
	// created together, so a reason listed then whose dead letter is not in
	// the listing that follows belongs to a dead letter removed since (by
	// a zkgen that keeps no reasons), and is removed too.
	reasons, err := opsOf(q.s).Children(ctx, joinPath(q.dir, deadReasonsDir))
	if err != nil && !client.IsNoNode(err) {
		return nil, err
	}
	dir := joinPath(q.dir, deadDir)
	kids, err := opsOf(q.s).Children(ctx, dir)
	if client.IsNoNode(err) {
		kids, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	q.dropStrayReasons(ctx, reasons, kids)
	out := make([]*DeadLetter[T], len(kids))
	errs := make([]error, len(kids))
	opsOf(q.s).Parallel(len(kids), 32, func(i int) {
		p := joinPath(dir, kids[i])
		data, st, err := opsOf(q.s).Get(ctx, p)
		if err != nil {
			if !client.IsNoNode(err) { // gone meanwhile: not listed
				errs[i] = err
			}
			return
		}
		_, name, _ := strings.Cut(kids[i], ".")
		it, _ := parseItem(name)
		d := &DeadLetter[T]{q: q, node: p, item: it, data: data, Moved: time.UnixMilli(st.Ctime).UTC()}
		if d.Value, err = q.codec.Decode(data); err != nil {
			d.Err = fmt.Errorf("queue dead letter %s: %w", p, err)
		}
		if slices.Contains(reasons, kids[i]) {
			why, _, err := opsOf(q.s).Get(ctx, q.reasonPath(p))
			switch {
			case err == nil:
				d.Reason, d.reason = string(why), q.reasonPath(p)
			case !client.IsNoNode(err):
				errs[i] = err
				return
			}
		}
		out[i] = d
	})
	if err := client.JoinErrors(errs...); err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(d *DeadLetter[T]) bool { return d == nil })
	slices.SortFunc(out, func(a, b *DeadLetter[T]) int {
		return cmp.Or(a.Moved.Compare(b.Moved), strings.Compare(a.node, b.node))
	})
	return out, nil
}

// dropStrayReasons deletes the reason nodes whose dead letter is gone
// (best effort: another listing does it again).
func (q *queue[T]) dropStrayReasons(ctx context.Context, reasons, dead []string) {
	if opsOf(q.s).ReadOnly() {
		return
	}
	for _, r := range reasons {
		if slices.Contains(dead, r) {
			continue
		}
		p := joinPath(joinPath(q.dir, deadReasonsDir), r)
		if err := opsOf(q.s).Delete(ctx, p, -1); err != nil && !client.IsNoNode(err) {
			opsOf(q.s).Log().Warn("could not remove the reason of a removed dead letter", "path", p, "err", err)
		}
	}
}

// DeadLetters lists the items moved to the queue's dead letters (see
// WithDeadLetterAfter), oldest move first, decoded; each can be requeued or
// discarded.
func (q *AckQueue[T]) DeadLetters(ctx context.Context) ([]*DeadLetter[T], error) {
	return q.q.deadLetters(ctx)
}

// DeadLetters lists the items moved to the queue's dead letters; see
// AckQueue.DeadLetters. Requeue puts an item back at its priority.
func (q *AckPriorityQueue[T]) DeadLetters(ctx context.Context) ([]*DeadLetter[T], error) {
	return q.q.deadLetters(ctx)
}

// DeadLetters lists the items moved to the queue's dead letters; see
// AckQueue.DeadLetters. Requeue puts an item back at its original due
// time: due at once.
func (q *AckDelayQueue[T]) DeadLetters(ctx context.Context) ([]*DeadLetter[T], error) {
	return q.q.deadLetters(ctx)
}

// deadLettered counts an item moved to a queue's dead letters.
func (t *telemetry) deadLettered(kind, name, path string) {
	if t == nil {
		return
	}
	t.deadLetters.Add(context.Background(), 1, metric.WithAttributes(resAttrs(kind, name, path)...))
}
