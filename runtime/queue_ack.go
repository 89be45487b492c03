package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Delivery is one item handed out by an at-least-once queue: the item stays
// in ZooKeeper, claimed by an ephemeral claim node of this session, until
// Ack deletes it. If the session ends first the claim vanishes and another
// consumer gets the item.
type Delivery[T any] struct {
	// Value is the decoded item.
	Value T
	// Attempt is how many times the item has been delivered, this delivery
	// included: 1 the first time. It is counted in ZooKeeper, across
	// consumers and sessions; a delivery whose consumer's session ended
	// before Ack or Release counts too, and so does a claim given back
	// because the Take's ctx ended before it returned. A delivery given
	// back with GiveBack does not count: the next one has the same
	// Attempt. It is 0 for at-most-once queues.
	Attempt int

	q     *queue[T]
	node  string
	claim string
	data  []byte // the item's encoding, for a move to the dead letters
	raw   []byte // the item node's data, written back by GiveBack (nil for an item carried in its name)
	ver   int32  // the item node's data version when claimed: its give-backs so far
	once  settleOnce
}

// Node returns the item's znode path.
func (d *Delivery[T]) Node() string { return d.node }

// Ack deletes the item and its claim in one multi: the item is consumed.
// It returns ErrClaimLost when the claim is gone (the session ended before
// the Ack was sent, so nothing changed and the item will be delivered
// again; or someone deleted the claim node by hand) and ErrNotHeld when
// the delivery was acked or released already.
// Connection losses are retried. If the session ends while an attempt's
// outcome is unknown (sent, and its reply lost), the session's error
// (ErrSessionExpired, ErrClosed) is returned without ErrClaimLost: the item
// was consumed or will be delivered again. If ctx ends first, ctx's error is
// returned and the item may or may not be deleted (it stays claimed until
// the session ends).
func (d *Delivery[T]) Ack(ctx context.Context) (err error) {
	if d.q == nil {
		return errZeroValue
	}
	defer d.q.telOp(ctx, opAck, true).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	// Retried while the session lives (not for the retry policy's ten
	// attempts): only this session's end can make the claim go, so an
	// outage it outlives must not fail the Ack (TestAckQueueEnsembleFailover
	// failed so, 8 s without quorum on a loaded machine).
	sent, err := d.q.ackMarked(client.UntilSessionEnds(ctx), d)
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
	return client.OpError("ack", d.node, err)
}

// ackMarked deletes d's item, claim and attempts node in one multi that
// also creates a marker of this Ack (and deletes an earlier Ack's, see
// ackMarks). After a connection loss the marker, not the item, tells
// whether the multi happened: the item may be gone by another consumer's
// Ack, when an operator deleted this one's claim and the item was claimed
// anew (the search's reap-ackqueue workload found both Acks reporting
// success, seed 135108343). ErrNoNode for the item, claim or attempts
// node is returned: the claim is lost. sent reports whether an attempt
// was sent at all.
func (q *queue[T]) ackMarked(ctx context.Context, d *Delivery[T]) (sent bool, err error) {
	marker := q.newMarker()
	old := q.acks.pop()
	err = opsOf(q.s).RetryUncertain(ctx, client.UncertainWrite{Op: "ack", Path: d.node,
		Attempt: func(int) (client.Outcome, error) {
			if err := q.s.Err(); err != nil {
				return client.OutcomeKnown, err // nothing is sent on an ended session
			}
			ops := []any{
				&zk.DeleteRequest{Path: d.node, Version: -1},
				&zk.DeleteRequest{Path: d.claim, Version: -1},
				&zk.DeleteRequest{Path: q.attemptsPath(d.claim), Version: -1},
				&zk.CreateRequest{Path: marker, Flags: zk.FlagEphemeral, Acl: opsOf(q.s).NodeACL(q.acl)},
			}
			if old != "" {
				ops = append(ops, &zk.DeleteRequest{Path: old, Version: -1})
			}
			sent = true
			res, err := client.AwaitOn(ctx, q.s, d.node, func() ([]zk.MultiResponse, error) { return opsOf(q.s).ConnMulti(ops...) })
			switch i, _ := client.FailedOp(res); {
			case err == nil:
				return client.OutcomeKnown, nil
			case IsRecoverable(err):
				return client.OutcomeHidden, err
			case i == 3 && errors.Is(err, zk.ErrNoNode): // no marker directory yet
				if err := opsOf(q.s).EnsurePath(ctx, q.acl, joinPath(q.dir, marksDir)); err != nil {
					return client.OutcomeKnown, err
				}
				return client.OutcomeResend, nil
			case i == 4 && errors.Is(err, zk.ErrNoNode):
				old = "" // gone already: its session ended, or an operator's delete
				return client.OutcomeResend, nil
			}
			return client.OutcomeKnown, err
		},
		Settle: func(ctx context.Context) (client.Outcome, error) {
			found, err := q.findMarker(ctx, marker)
			switch {
			case err != nil:
				return client.OutcomeKnown, err
			case found:
				return client.OutcomeKnown, nil
			}
			return client.OutcomeResend, nil
		},
	})
	switch {
	case err == nil:
		q.acks.push(q, marker)
		return sent, nil
	case ctx.Err() != nil && q.s.Err() == nil:
		q.dropMarker(marker) // the multi may have made it
	}
	if old != "" {
		q.acks.push(q, old)
	}
	return sent, err
}

// ackMarks are the markers of a machine's Acks that succeeded, each waiting
// to be deleted by the multi of a later Ack (one per Ack), or after
// markerLinger on its own: a busy consumer spends no request on them, an
// idle one keeps none. A pool, not a side's one marker (lingering): a
// consumer acks while it takes the next item, and acks concurrently.
type ackMarks struct {
	mu    sync.Mutex
	paths []string
	timer *time.Timer
}

// pop takes a pending marker for an Ack's multi to delete; "" if none.
func (a *ackMarks) pop() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.paths)
	if n == 0 {
		return ""
	}
	p := a.paths[n-1]
	a.paths = a.paths[:n-1]
	return p
}

// push makes path pending and arms its deletion after markerLinger.
func (a *ackMarks) push(q interface{ dropMarker(string) }, path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paths = append(a.paths, path)
	if a.timer == nil {
		a.timer = time.AfterFunc(markerLinger, func() { a.flush(q) })
	} else {
		a.timer.Reset(markerLinger)
	}
}

// flush deletes every pending marker in the background.
func (a *ackMarks) flush(q interface{ dropMarker(string) }) {
	a.mu.Lock()
	paths := a.paths
	a.paths = nil
	a.mu.Unlock()
	for _, p := range paths {
		q.dropMarker(p)
	}
}

// Release gives the item back without consuming it, and the delivery
// counts (Attempt): its claim is deleted and another consumer (or this
// one, on a later pass) takes it again. With After(d) the claim is kept d
// longer, so that no consumer takes the item before d has passed (see
// After). On a queue with WithDeadLetterAfter(n), a delivery whose Attempt
// is n or more is moved to the dead letters instead (see
// AckQueue.DeadLetters), in one multi, at once. Errors are as for Ack.
// Release is for a failure of the item's own; GiveBack is for a consumer
// that could not run it.
func (d *Delivery[T]) Release(ctx context.Context, opts ...ReleaseOption) error {
	return d.release(ctx, "", opts)
}

// Nack is Release with the reason this consumer gives the item up: when
// the release moves the item to the dead letters, the dead letter keeps
// reason's text (DeadLetter.Reason), so whoever looks at it learns why the
// item died. A nil reason is Release. Consume nacks with its function's
// error (unless that error is a give-back, ErrGiveBack).
func (d *Delivery[T]) Nack(ctx context.Context, reason error, opts ...ReleaseOption) error {
	if reason == nil {
		return d.release(ctx, "", opts)
	}
	return d.release(ctx, reason.Error(), opts)
}

func (d *Delivery[T]) release(ctx context.Context, reason string, opts []ReleaseOption) (err error) {
	if d.q == nil {
		return errZeroValue
	}
	defer d.q.telOp(ctx, opRelease, true).end(&err)
	if err := d.finish(); err != nil {
		return err
	}
	if n := d.q.deadAfter; n > 0 && d.Attempt >= n {
		return d.q.moveDead(ctx, d.node, d.claim, d.data, reason)
	}
	if after := releaseAfter(opts); after > 0 {
		if err := d.q.s.Err(); err != nil {
			return fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
		}
		d.q.holdClaim(d.claim, after)
		return nil
	}
	err = opsOf(d.q.s).DeleteOwned(ctx, d.claim)
	switch {
	case err == nil:
		d.q.cons.released.Store(true)
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed):
		return fmt.Errorf("queue %s: %w (%w)", d.node, ErrClaimLost, err)
	}
	return err
}

func (d *Delivery[T]) finish() error { return d.once.settle("queue", d.node) }

// settleOnce lets a Delivery or DeadLetter be acted on once: the first
// settle succeeds, later ones return ErrNotHeld (until undo).
type settleOnce struct {
	mu   sync.Mutex
	done bool
}

func (o *settleOnce) settle(what, node string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return fmt.Errorf("%s %s: %w", what, node, ErrNotHeld)
	}
	o.done = true
	return nil
}

// undo lets the caller try again after an error that changed nothing.
func (o *settleOnce) undo() {
	o.mu.Lock()
	o.done = false
	o.mu.Unlock()
}

// refreshBusy forgets the items whose claims by other consumers vanished; if
// one did, the walk restarts from the lowest bucket to pick it up.
func (q *queue[T]) refreshBusy(ctx context.Context) error {
	kids, err := opsOf(q.s).Children(ctx, joinPath(q.dir, claimsDir))
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
	if len(q.cons.busy) == 0 && q.cons.spread.skipped == 0 {
		return nil, false, nil
	}
	c, err := opsOf(q.s).ChildrenW(ctx, joinPath(q.dir, claimsDir))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, false, err
	}
	if q.dropReleased(c.Kids) {
		return nil, true, nil
	}
	return c.Watch, false, nil
}

// dropReleased removes from busy the items not among claims and reports
// whether there were any: then the current bucket is listed again, and the
// walk restarts from the lowest bucket when one of them is in another.
func (q *queue[T]) dropReleased(claims []string) bool {
	live := make(map[string]bool, len(claims))
	for _, c := range claims {
		live[c] = true
	}
	cur := q.bucketPath(q.cons.bucket) + "/"
	dropped, elsewhere := q.dropReleasedChunks(claims), false
	for p, claim := range q.cons.busy {
		if !live[claim] {
			delete(q.cons.busy, p)
			dropped = true
			elsewhere = elsewhere || q.cons.bucket == "" || !strings.HasPrefix(p, cur)
		}
	}
	if elsewhere {
		q.cons.bucket = ""
	}
	if dropped {
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
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
	defer cancel()
	bp := q.bucketPath(bucket)
	cdir := joinPath(q.dir, claimsDir)
	cs := make([]claimed, len(cands))
	opsOf(q.s).Parallel(len(cands), 32, func(i int) {
		p := joinPath(bp, cands[i].name)
		c := joinPath(cdir, q.claimName(p))
		ok, attempt, err := q.createClaim(ctx, cdir, c, p)
		if errors.Is(err, errItemGone) {
			return // acked or moved by another since our listing: nothing to claim
		}
		cs[i] = claimed{path: p, claim: c, ok: ok, busy: !ok && err == nil, attempt: attempt, inline: cands[i].hasIn, err: err}
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
			q.cons.busy[c.path] = q.claimName(c.path)
			q.contended()
		case c.ok:
			held = append(held, c)
			paths = append(paths, c.path)
			items = append(items, cands[i])
		}
	}
	out, errs := q.deliver(ctx, held, q.fetch(ctx, paths, items, true), errs)
	return out, client.JoinErrors(errs...)
}

// claimed is one claim attempt of claimAll.
type claimed struct {
	path, claim string
	ok, busy    bool
	attempt     int  // deliveries counted in the attempts node, given-back ones included
	inline      bool // the item rides in its name; its node holds no data
	err         error
}

// deliver turns the claimed items, read as fs, into deliveries, adding to
// errs; it moves the items delivered too often to the dead letters, and
// gives back the claims of the items it cannot deliver.
func (q *queue[T]) deliver(ctx context.Context, held []claimed, fs []fetched, errs []error) ([]*Delivery[T], []error) {
	var out []*Delivery[T]
	for i, f := range fs {
		c := held[i]
		if errors.Is(f.err, zk.ErrNoNode) {
			// Acked (or moved to the dead letters) by someone before our
			// claim: give the claim back, and the count we made for it.
			q.unclaimGone(c.claim)
			continue
		}
		// The item's data version counts the deliveries given back
		// (GiveBack), which the attempts node counted too.
		attempt := max(c.attempt-int(f.ver), 1)
		if f.err == nil && q.deadAfter > 0 && attempt > q.deadAfter {
			// Delivered deadAfter times already without an ack: a poison
			// item. Move it instead of delivering it again.
			why := fmt.Sprintf("delivery %d ended without an ack or a release: its consumer's session ended", attempt-1)
			if err := q.moveDead(ctx, c.path, c.claim, f.data, why); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var v T
		err := f.err
		if err == nil {
			if v, err = q.codec.Decode(f.data); err != nil {
				q.cons.poison[c.path] = true
				err = fmt.Errorf("queue item %s (left in place): %w", c.path, err)
			}
		}
		if err != nil {
			// Undecodable or unreadable: give the claim back.
			q.unclaim(c.claim)
			errs = append(errs, err)
			continue
		}
		d := &Delivery[T]{Value: v, Attempt: attempt, q: q, node: c.path, claim: c.claim, data: f.data, ver: f.ver}
		if !c.inline {
			d.raw = f.data
		}
		out = append(out, d)
	}
	return out, errs
}

// createClaim claims an item: one multi creates the ephemeral claim node
// and counts the delivery in the item's persistent attempts node
// (<dir>/attempts/<bucket>.<item>, created at the first delivery, its data
// version bumped at each later one), so the count survives the consumers'
// sessions. It reports ok false (and no error) when another session holds
// the claim, and otherwise the deliveries counted, this one included (1 for
// the first; deliver takes the given-back ones off).
// A multi retried after a connection loss that finds the claim checks
// whether it is this attempt's, by the nonce each attempt writes into its
// claim (the session alone would not tell: this session may hold the
// claim already, kept by a GiveBack or Release with After), and then
// reads the count. The multi also checks that
// item exists: a claim of an item acked or moved since the caller listed
// it creates nothing (errItemGone), so no attempts node is left for a gone
// item if this session ends before it could clean up. (A lost multi of
// ours that went through cannot be the case: our claim would have kept
// every other consumer off the item.) An error after a lost reply leaves
// the claim unsettled: it is released in the background if ours, else it
// would keep the item from every consumer, this one too (it reads its own
// claim as another's), for the session's lifetime
// (TestAckQueueClaimLostInOutageReleased).
func (q *queue[T]) createClaim(ctx context.Context, cdir, claim, item string) (ok bool, attempt int, err error) {
	att := q.attemptsPath(claim)
	retried := false
	defer func() {
		if retried && err != nil {
			q.releaseClaim(claim)
		}
	}()
	first := true // no attempts node seen: create it with the claim
	nonce := opsOf(q.s).Nonce(claim)
	for {
		ops := []any{
			&zk.CheckVersionRequest{Path: item, Version: -1},
			&zk.CreateRequest{Path: claim, Data: nonce, Flags: zk.FlagEphemeral, Acl: opsOf(q.s).NodeACL(q.acl)},
		}
		if first {
			ops = append(ops, &zk.CreateRequest{Path: att, Acl: opsOf(q.s).NodeACL(q.acl)})
		} else {
			ops = append(ops, &zk.SetDataRequest{Path: att, Version: -1})
		}
		res, hidden, err := opsOf(q.s).MultiRetried(ctx, ops...)
		retried = retried || hidden
		if err == nil {
			if first {
				return true, 1, nil
			}
			return true, int(res[2].Stat.Version) + 1, nil
		}
		i, _ := client.FailedOp(res)
		i-- // the claim's create is op 0 below, the attempts node's op 1
		switch {
		case i == -1 && errors.Is(err, zk.ErrNoNode):
			return false, 0, errItemGone // see above
		case i == 0 && errors.Is(err, zk.ErrNoNode):
			if err := opsOf(q.s).EnsurePath(ctx, q.acl, cdir); err != nil {
				return false, 0, err
			}
		case i == 0 && errors.Is(err, zk.ErrNodeExists):
			if !retried {
				return false, 0, nil
			}
			if ok, attempt, err := q.ownClaim(ctx, claim, nonce); err != errClaimGone {
				return ok, attempt, err
			}
		case i == 1 && first && errors.Is(err, zk.ErrNoNode):
			if err := opsOf(q.s).EnsurePath(ctx, q.acl, joinPath(q.dir, attemptsDir)); err != nil {
				return false, 0, err
			}
		case i == 1 && first && errors.Is(err, zk.ErrNodeExists):
			first = false // delivered before: count this one
		case i == 1 && !first && errors.Is(err, zk.ErrNoNode):
			first = true // the count went with its item meanwhile
		default:
			return false, 0, client.OpError("claim", claim, err)
		}
	}
}

// errItemGone is createClaim's answer for an item that no longer exists.
var errItemGone = errors.New("queue: item gone")

// errClaimGone makes createClaim try again: the claim it found after a
// connection loss is gone.
var errClaimGone = errors.New("queue: claim gone")

// ownClaim settles a claim multi retried after a connection loss that found
// the claim node: it is the multi's own when this session owns it and it
// carries the multi's nonce (the lost multi went through, and the count is
// read back), and otherwise another's, or an earlier one of this session's
// (kept by After), which the item waits for like any other.
func (q *queue[T]) ownClaim(ctx context.Context, claim string, nonce []byte) (bool, int, error) {
	data, st, err := opsOf(q.s).Get(ctx, claim)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, 0, errClaimGone
	case err != nil:
		return false, 0, err
	case st.EphemeralOwner != q.s.ID() || !bytes.Equal(data, nonce):
		return false, 0, nil
	}
	att := q.attemptsPath(claim)
	_, ast, err := opsOf(q.s).Get(ctx, att)
	if err != nil {
		return false, 0, client.OpError("get", att, err)
	}
	return true, int(ast.Version) + 1, nil
}

// attemptsPath is the attempts node of the item whose claim is claim.
func (q *queue[T]) attemptsPath(claim string) string {
	return joinPath(joinPath(q.dir, attemptsDir), baseName(claim))
}

// unclaimGone deletes a claim and the attempts node created with it, for an
// item that was gone when claimed (acked or moved by another meanwhile).
func (q *queue[T]) unclaimGone(claim string) {
	ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	att := q.attemptsPath(claim)
	_, err := opsOf(q.s).DeleteAll(ctx, claim, att)
	if errors.Is(err, zk.ErrNoNode) {
		// Only one of them is left.
		q.unclaim(claim)
		if err := opsOf(q.s).Delete(ctx, att, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && q.s.Err() == nil {
			opsOf(q.s).Log().Warn("could not remove attempts node", "path", att, "err", err)
		}
		return
	}
	if err != nil && q.s.Err() == nil {
		opsOf(q.s).Log().Warn("could not release claim", "path", claim, "err", err)
	}
}

// unclaim deletes a claim with a fresh, bounded context.
func (q *queue[T]) unclaim(claim string) {
	ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	if err := opsOf(q.s).DeleteOwned(ctx, claim); err != nil && !errors.Is(err, zk.ErrNoNode) && q.s.Err() == nil {
		opsOf(q.s).Log().Warn("could not release claim", "path", claim, "err", err)
	}
}
