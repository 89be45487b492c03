package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Giving an item back, and backing off
//
// A delivery ends in one of three ways besides Ack:
//
//   - Release (Nack): the item failed; the delivery counts toward
//     WithDeadLetterAfter.
//   - GiveBack: the consumer could not run the item, for a reason of its
//     own; the delivery does not count. The attempts node
//     (<dir>/attempts/<bucket>.<item>) counts every claim, and its version
//     can only grow, so the give-backs are counted apart, in the data
//     version of the item node itself: one multi writes the item's data
//     back unchanged at the version read when it was claimed, and deletes
//     the claim. A claim reads the item anyway, so Attempt (the attempts
//     node's count less the item's version) costs no request more. Only
//     the claim's holder writes an item, so a give-back sent again after a
//     connection loss that finds the version moved (or the item gone) knows
//     the lost attempt did it, and never deletes a claim another consumer
//     made since.
//   - After(d), with either: the claim, an ephemeral node, is kept d more
//     and then deleted. Consumers of every zkgen version skip a claimed
//     item, so none takes it before then; if this session ends first, the
//     claim goes with it and the item is back.

// ReleaseOption configures Delivery.Release, Nack and GiveBack: After.
type ReleaseOption func(*releaseConfig)

type releaseConfig struct{ after time.Duration }

// After keeps the item out of every consumer's sight for d after a
// Release, Nack or GiveBack: the delivery's claim, an ephemeral node of
// this session, is kept d longer and then deleted by a goroutine of this
// process, so the call itself returns at once. Consumers skip claimed
// items (those of earlier zkgen versions too, which know nothing of
// After), this process's included, so none takes the item before d has
// passed by this process's clock; those waiting are woken by the claim's
// delete, without polling. If the session ends first (Close, expiry, the
// process killed), the claim goes with it and the item is back then:
// earlier than d after Close, after the session timeout when the process
// dies. The item is never lost. A Release that moves the item to the dead
// letters does so at once. Stats counts the item as Claimed meanwhile.
// d <= 0 gives the item back at once, as without After.
func After(d time.Duration) ReleaseOption {
	return func(c *releaseConfig) { c.after = d }
}

// releaseAfter is the delay opts ask for.
func releaseAfter(opts []ReleaseOption) time.Duration {
	var c releaseConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c.after
}

// GiveBack gives the item back without counting the delivery: the item's
// next delivery has this one's Attempt, so a consumer that could not run
// it for a reason of its own (no GPU lease yet, shutting down, a
// dependency down) never moves it to the dead letters, whatever
// WithDeadLetterAfter says. Use Release (Nack) when the item itself failed.
// One multi writes the item's data back unchanged (its data version counts
// the give-backs) and deletes the claim: the give-back and the count change
// together or not at all. With After(d) the claim is kept d longer (see
// After). It runs detached from ctx, bounded like the session's cleanups:
// a connection loss is ridden out and its outcome settled.
//
// It returns ErrClaimLost when the claim was gone before the give-back
// was sent (the session ended: the delivery counts, as any whose session
// ends); when the session ends while the give-back's outcome is unknown,
// the session's error without ErrClaimLost (the item is delivered again,
// with this delivery counted or not); and ErrNotHeld when the delivery was
// acked, released or given back already.
func (d *Delivery[T]) GiveBack(ctx context.Context, opts ...ReleaseOption) (err error) {
	if d.q == nil {
		return errZeroValue
	}
	defer d.q.telOp(ctx, opGiveBack, true).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	after := releaseAfter(opts)
	if err := d.q.giveBackClaim(ctx, d, after > 0); err != nil {
		return err
	}
	if after > 0 {
		d.q.holdClaim(d.claim, after)
	} else {
		d.q.cons.released.Store(true)
	}
	return nil
}

// giveBackClaim sends d's give-back: one multi writes the item's data at
// the version it had when claimed, and deletes the claim unless keep is
// set.
func (q *queue[T]) giveBackClaim(ctx context.Context, d *Delivery[T], keep bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
	defer cancel()
	ops := []any{&zk.SetDataRequest{Path: d.node, Data: d.raw, Version: d.ver}}
	if !keep {
		ops = append(ops, &zk.DeleteRequest{Path: d.claim, Version: -1})
	}
	sent := false
	return opsOf(q.s).RetryUncertain(ctx, client.UncertainWrite{Op: "give back", Path: d.node,
		Attempt: func(n int) (client.Outcome, error) {
			if err := q.s.Err(); err != nil {
				return client.OutcomeKnown, d.ended(err, sent)
			}
			sent = true
			return q.giveBackClaimOnce(ctx, d, ops, n)
		},
		Interrupted: func(err error) error { return d.ended(err, true) },
	})
}

// giveBackClaimOnce is attempt n of giveBackClaim. After a connection
// loss the multi is sent again: a version moved or an item gone then means
// the lost attempt did it (only the claim's holder writes the item), and
// the claim delete, which comes second, is not applied, so a claim another
// consumer made since is left alone.
func (q *queue[T]) giveBackClaimOnce(ctx context.Context, d *Delivery[T], ops []any, n int) (client.Outcome, error) {
	res, err := client.Await(ctx, q.s, func() ([]zk.MultiResponse, error) { return opsOf(q.s).ConnMulti(ops...) })
	i, _ := client.FailedOp(res)
	switch {
	case err == nil:
		return client.OutcomeKnown, nil
	case IsRecoverable(err):
		return client.OutcomeHidden, err
	case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed), errors.Is(err, zk.ErrSessionExpired):
		return client.OutcomeKnown, d.ended(err, true)
	case n > 1 && i == 0 && (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode)):
		return client.OutcomeKnown, nil // the lost attempt did it
	case i == 1 && errors.Is(err, zk.ErrNoNode):
		return client.OutcomeKnown, fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
	}
	return client.OutcomeKnown, client.OpError("give back", d.node, err)
}

// ended is the error of a give-back cut short by err, the session's end
// (or the cleanup bound): ErrClaimLost when nothing was sent (the claim is
// gone with the session, the delivery counted), otherwise an unknown
// outcome (the item is delivered again, counted or not).
func (d *Delivery[T]) ended(err error, sent bool) error {
	if !sent {
		return fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
	}
	return fmt.Errorf("queue %s: give-back outcome unknown: %w", d.node, err)
}

// holdClaim keeps claim, this session's, for d (After), then deletes it:
// the item is back for every consumer. It does not block. A delete that
// fails while the session lives is tried again, so the item is never left
// claimed by a live session; the session's end takes the claim with it.
func (q *queue[T]) holdClaim(claim string, d time.Duration) {
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-q.s.Done():
			return
		}
		for q.s.Err() == nil {
			ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
			err := opsOf(q.s).DeleteOwned(ctx, claim)
			cancel()
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				q.cons.released.Store(true)
				return
			}
			if q.s.Err() == nil {
				opsOf(q.s).Log().Warn("could not release a backed-off claim; trying again", "path", claim, "err", err)
			}
			_ = opsOf(q.s).Sleep(context.Background(), time.Second) // ends early with the session
		}
	}()
}
