package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Delivery is one item handed out by an at-least-once queue: the item stays
// in ZooKeeper, claimed by an ephemeral claim node of this session, until
// Ack deletes it. If the session ends first the claim vanishes and another
// consumer gets the item.
type Delivery[T any] struct {
	// Value is the decoded item.
	Value T

	q     *queue[T]
	node  string
	claim string
	mu    sync.Mutex
	done  bool
}

// Node returns the item's znode path.
func (d *Delivery[T]) Node() string { return d.node }

// Ack deletes the item and its claim in one multi: the item is consumed.
// It returns ErrClaimLost when the claim is gone (the session ended before
// the Ack was sent, so nothing changed and the item will be delivered again)
// and ErrNotHeld when the delivery was acked or released already.
// Connection losses are retried. If the session ends while an attempt's
// outcome is unknown (sent, and its reply lost), the session's error
// (ErrSessionExpired, ErrClosed) is returned without ErrClaimLost: the item
// was consumed or will be delivered again. If ctx ends first, ctx's error is
// returned and the item may or may not be deleted (it stays claimed until
// the session ends).
func (d *Delivery[T]) Ack(ctx context.Context) (err error) {
	defer d.q.s.tel.begin(ctx, opAck, d.q.kindName(), d.q.name, d.q.dir).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	s := d.q.s
	retried := false
	sent := false // an attempt may have reached the server
	err = s.retry(ctx, func() error {
		if err := s.check(); err != nil {
			return err
		}
		sent = true
		_, err := await(ctx, s, func() ([]zk.MultiResponse, error) {
			return s.conn.Multi(&zk.DeleteRequest{Path: d.node, Version: -1}, &zk.DeleteRequest{Path: d.claim, Version: -1})
		})
		if errors.Is(err, zk.ErrNoNode) && retried {
			// Only the claim's holder deletes a claimed item: the lost
			// attempt did it.
			return nil
		}
		if IsRecoverable(err) {
			retried = true
		}
		return err
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
	case errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed):
		if sent {
			// The multi may have gone through before the session ended.
			return fmt.Errorf("queue %s: ack outcome unknown: %w", d.node, err)
		}
		return fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
	}
	return opError("ack", d.node, err)
}

// Release gives the item back without consuming it: its claim is deleted
// and another consumer (or this one, on a later pass) takes it again.
// Errors are as for Ack.
func (d *Delivery[T]) Release(ctx context.Context) (err error) {
	defer d.q.s.tel.begin(ctx, opRelease, d.q.kindName(), d.q.name, d.q.dir).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	err = d.q.s.deleteOwned(ctx, d.claim)
	switch {
	case err == nil:
		d.q.cons.released.Store(true)
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed):
		return fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
	}
	return err
}

func (d *Delivery[T]) finish() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return fmt.Errorf("queue %s: %w", d.node, ErrNotHeld)
	}
	d.done = true
	return nil
}

// refreshBusy forgets the items whose claims by other consumers vanished; if
// one did, the walk restarts from the lowest bucket to pick it up.
func (q *queue[T]) refreshBusy(ctx context.Context) error {
	kids, err := q.s.children(ctx, joinPath(q.dir, claimsDir))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	q.dropReleased(kids)
	return nil
}

// claimsWatch watches the claims directory while this consumer skips items
// claimed by others (at-least-once), so that it wakes when such a claim
// vanishes; nil when there is nothing to watch. again reports that claims
// vanished already (the walk restarts from the lowest bucket).
func (q *queue[T]) claimsWatch(ctx context.Context) (w <-chan zk.Event, again bool, err error) {
	if !q.ack || len(q.cons.busy) == 0 {
		return nil, false, nil
	}
	c, err := q.s.childrenW(ctx, joinPath(q.dir, claimsDir))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, false, err
	}
	if q.dropReleased(c.kids) {
		return nil, true, nil
	}
	return c.watch, false, nil
}

// dropReleased removes from busy the items not among claims and reports
// whether there were any (then the walk restarts from the lowest bucket).
func (q *queue[T]) dropReleased(claims []string) bool {
	live := make(map[string]bool, len(claims))
	for _, c := range claims {
		live[c] = true
	}
	dropped := false
	for p := range q.cons.busy {
		if !live[q.claimName(p)] {
			delete(q.cons.busy, p)
			dropped = true
		}
	}
	if dropped {
		q.cons.bucket = ""
		q.cons.cache, q.cons.pos, q.cons.watch = nil, 0, nil
	}
	return dropped
}

// claimName is the claim node name of an item path: <bucket>.<item>.
func (q *queue[T]) claimName(item string) string {
	rel := strings.TrimPrefix(item, q.dir+"/")
	return strings.Replace(rel, "/", ".", 1)
}

// claimAll takes candidates at least once: it creates an ephemeral claim
// for each (an existing claim means another consumer has it), then reads
// and decodes the claimed items. Undecodable items are released, left in
// place and reported with their path.
// Like deleteAll it runs detached from the caller's ctx, so that no claim
// is left behind unknown.
func (q *queue[T]) claimAll(ctx context.Context, bucket string, cands []qitem) ([]*Delivery[T], error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	bp := q.bucketPath(bucket)
	cdir := joinPath(q.dir, claimsDir)
	type claimed struct {
		path, claim string
		ok, busy    bool
		err         error
	}
	cs := make([]claimed, len(cands))
	parallel(len(cands), 32, func(i int) {
		p := joinPath(bp, cands[i].name)
		c := joinPath(cdir, q.claimName(p))
		ok, err := q.createClaim(ctx, cdir, c)
		cs[i] = claimed{path: p, claim: c, ok: ok, busy: !ok && err == nil, err: err}
	})
	var paths []string
	var errs []error
	var held []claimed
	var items []qitem
	for i, c := range cs {
		switch {
		case c.err != nil:
			errs = append(errs, c.err)
		case c.busy:
			// Not counted as a race (raced): a claim may be held for long,
			// by a live consumer, and skipping it keeps the order.
			q.cons.busy[c.path] = true
		case c.ok:
			held = append(held, c)
			paths = append(paths, c.path)
			items = append(items, cands[i])
		}
	}
	var out []*Delivery[T]
	for i, f := range q.fetch(ctx, paths, items, true) {
		c := held[i]
		var v T
		err := f.err
		if err == nil {
			if v, err = q.codec.Decode(f.data); err != nil {
				q.cons.poison[c.path] = true
				err = fmt.Errorf("queue item %s (left in place): %w", c.path, err)
			}
		}
		if err != nil {
			// Acked by someone before our claim (NoNode), undecodable, or
			// unreadable: give the claim back.
			q.unclaim(c.claim)
			if !errors.Is(err, zk.ErrNoNode) {
				errs = append(errs, err)
			}
			continue
		}
		out = append(out, &Delivery[T]{Value: v, q: q, node: c.path, claim: c.claim})
	}
	return out, errors.Join(errs...)
}

// createClaim creates an ephemeral claim node. It reports false (and no
// error) when another session holds the claim. A create retried after a
// connection loss that finds the node checks whether it is ours.
func (q *queue[T]) createClaim(ctx context.Context, cdir, claim string) (bool, error) {
	retried := false
	for {
		err := q.s.retry(ctx, func() error {
			_, err := await(ctx, q.s, func() (string, error) {
				return q.s.create(claim, nil, zk.FlagEphemeral, q.acl)
			})
			if IsRecoverable(err) {
				retried = true
			}
			return err
		})
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := q.s.ensurePath(ctx, q.acl, cdir); err != nil {
				return false, err
			}
			continue
		case errors.Is(err, zk.ErrNodeExists):
			if !retried {
				return false, nil
			}
			_, st, err := q.s.get(ctx, claim)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return false, err
			}
			return st.EphemeralOwner == q.s.ID(), nil
		default:
			return false, opError("create", claim, err)
		}
	}
}

// unclaim deletes a claim with a fresh, bounded context.
func (q *queue[T]) unclaim(claim string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := q.s.deleteOwned(ctx, claim); err != nil && !errors.Is(err, zk.ErrNoNode) && q.s.check() == nil {
		q.s.log.Warn("could not release claim", "path", claim, "err", err)
	}
}
