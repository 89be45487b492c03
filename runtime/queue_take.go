package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

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
func (d *Delivery[T]) Ack(ctx context.Context) error {
	if err := d.finish(); err != nil {
		return err
	}
	s := d.q.s
	retried := false
	sent := false // an attempt may have reached the server
	err := s.retry(ctx, func() error {
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
func (d *Delivery[T]) Release(ctx context.Context) error {
	if err := d.finish(); err != nil {
		return err
	}
	err := d.q.s.deleteOwned(ctx, d.claim)
	switch {
	case err == nil:
		d.q.released.Store(true)
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

// take returns between 1 and n items, blocking until there is one. Items
// come from the cached listing of the current bucket; the bucket is listed
// again only when that listing is used up (or, for a priority queue, when
// its child watch fired).
func (q *queue[T]) take(ctx context.Context, n int) ([]*Delivery[T], error) {
	if n < 1 {
		return nil, fmt.Errorf("queue %s: take of %d items", q.dir, n)
	}
	if err := q.lock(ctx, q.cmu); err != nil {
		return nil, err
	}
	defer q.unlock(q.cmu, &q.cmark)
	for {
		if q.released.Swap(false) {
			// An item this handle had was given back: walk again from the
			// lowest bucket so it is served in its turn.
			q.cache, q.pos, q.watch, q.bucket = nil, 0, nil, ""
		}
		if q.priority && q.pos < len(q.cache) {
			changed := q.watch == nil // fired before, while serving the first priority
			if !changed {
				select {
				case <-q.watch: // something changed: an urgent item may have arrived
					changed = true
				default:
				}
			}
			if changed && q.cache[q.pos].prio == 0 {
				// Nothing overtakes an item of the first priority: keep
				// serving the listing; list again once past them.
				q.watch = nil
			} else if changed {
				q.cache, q.pos, q.watch = nil, 0, nil
			}
		}
		if q.pos >= len(q.cache) || q.staleCache() {
			if err := q.refill(ctx); err != nil {
				return nil, err
			}
			continue
		}
		end := min(q.pos+n, len(q.cache))
		cands := q.cache[q.pos:end]
		q.pos = end
		var out []*Delivery[T]
		var err error
		began := time.Now()
		if q.ack {
			out, err = q.claimAll(ctx, q.bucket, cands)
		} else {
			out, err = q.deleteAll(ctx, q.bucket, cands)
		}
		if q.ack && ctx.Err() != nil {
			// The caller gave up while the claims were being made: give
			// them back rather than leave them to the session's end.
			for _, d := range out {
				q.unclaim(d.claim)
			}
			return nil, ctx.Err()
		}
		if q.pos >= len(q.cache) && q.sealed {
			// Used up a sealed bucket: remove it now if it is empty, so
			// a drained queue leaves only its open bucket behind.
			if gone, err := q.dropBucket(ctx, q.bucket); err == nil && gone {
				q.cache, q.pos, q.watch, q.sealed = nil, 0, nil, false
				if err := q.advance(ctx); err != nil && len(out) == 0 {
					return nil, err
				}
			}
		}
		if len(out) > 0 || err != nil {
			return out, err
		}
		if !q.ack {
			// Lost the race for every candidate: the consumers are going
			// for the same items in step. Stand back for a random part of
			// the time the attempt took (a round trip, as loaded as the
			// server is), so the winner takes the next ones alone instead
			// of all sending deletes of which one succeeds.
			if d := time.Since(began); d > 0 {
				if err := q.s.sleep(ctx, time.Duration(rand.Int64N(int64(d)))); err != nil {
					return nil, err
				}
			}
		}
	}
}

// dropBucket deletes bucket b, a sealed one, if it is empty. If b is the
// highest bucket its successor is created first, so that the highest bucket
// is never removed; otherwise the successor is left alone: another consumer
// may have dropped it already, and creating it again would leave an open,
// empty bucket below the producers' one, where a consumer walking from the
// lowest bucket would wait forever. It reports whether b is gone.
func (q *queue[T]) dropBucket(ctx context.Context, b string) (bool, error) {
	bs, err := q.buckets(ctx)
	if err != nil {
		return false, err
	}
	switch {
	case !slices.Contains(bs, b):
		return true, nil // dropped by another consumer
	case bs[len(bs)-1] == b:
		if err := q.createNode(ctx, q.bucketPath(nextBucket(b)), nil); err != nil {
			return false, err
		}
	}
	err = q.s.delete(ctx, q.bucketPath(b), -1)
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return true, nil
	case errors.Is(err, zk.ErrNotEmpty):
		return false, nil
	}
	return false, err
}

// refill lists the current bucket into the cache, moving on past sealed
// buckets that have nothing left for this consumer, or waits (once) for a
// change when there is nothing to take. It returns nil to be called again.
func (q *queue[T]) refill(ctx context.Context) error {
	q.cache, q.pos, q.watch, q.sealed, q.stale = nil, 0, nil, false, 0
	if q.ack && len(q.busy) > 0 {
		if err := q.refreshBusy(ctx); err != nil {
			return err
		}
	}
	for b := range q.pendingDrop {
		if gone, err := q.dropBucket(ctx, b); err != nil || gone {
			delete(q.pendingDrop, b)
		}
	}
	if q.bucket == "" {
		bs, err := q.buckets(ctx)
		if err != nil {
			return err
		}
		if len(bs) == 0 {
			return q.waitDir(ctx)
		}
		q.bucket = bs[0]
	}
	bp := q.bucketPath(q.bucket)
	r, err := q.s.childrenW(ctx, bp)
	if errors.Is(err, zk.ErrNoNode) {
		return q.advance(ctx) // drained and deleted by another consumer
	}
	if err != nil {
		return err
	}
	var items []qitem
	for _, it := range sortItems(r.kids) {
		p := joinPath(bp, it.name)
		if !q.poison[p] && !q.busy[p] {
			items = append(items, it)
		}
	}
	q.sealed = r.stat.Version > 0
	if len(items) > 0 {
		q.cache, q.watch = items, r.watch
		return nil
	}
	if q.sealed {
		// Sealed: this listing is final. Remove the bucket once empty.
		if len(r.kids) == 0 {
			if _, err := q.dropBucket(ctx, q.bucket); err != nil {
				return err
			}
		} else if q.ack && len(q.busy) > 0 {
			// Only items claimed by others (or undecodable) are left: try
			// again later, once their consumers have acked them.
			q.pendingDrop[q.bucket] = true
		}
		return q.advance(ctx)
	}
	if again, err := q.healBuckets(ctx, r.stat.Version); again || err != nil {
		return err
	}
	// The open bucket has nothing for us: wait for a new item, for the
	// bucket to be sealed (a data watch), or for a claim to vanish.
	// The data watch is set once per bucket and kept until it fires, so
	// repeated waits on one bucket do not pile up watches.
	if q.dwBucket == q.bucket && q.dw != nil {
		select {
		case <-q.dw:
			q.dw = nil
			return nil // the bucket changed (sealed): look again
		default:
		}
	} else {
		d, err := q.s.getW(ctx, bp)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.stat.Version > 0 {
			return nil
		}
		q.dwBucket, q.dw = q.bucket, d.watch
	}
	var claimsW <-chan zk.Event
	if q.ack && len(q.busy) > 0 {
		c, err := q.s.childrenW(ctx, joinPath(q.dir, claimsDir))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if q.dropReleased(c.kids) {
			return nil
		}
		claimsW = c.watch
	}
	select {
	case <-r.watch:
	case <-q.dw:
		q.dw = nil
	case <-claimsW:
		if err := q.refreshBusy(ctx); err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-q.s.done:
		return q.s.Err()
	}
	return nil
}

// healBuckets runs before a consumer waits on its current bucket, open
// (data version ver) and with nothing for it. Normally that bucket is the
// highest, and every other bucket is sealed. A client that lagged behind
// (cut off between emptying a bucket and creating its successor, or
// listing buckets long ago) can re-create a bucket that others already
// drained and deleted: an open bucket below the live ones, where consumers
// would wait for ever and where that client's puts could land. So the
// consumer seals its bucket when it is not the highest (its contents are
// then final, and the sealed path drops it), and walks again from the
// lowest bucket when there are lower ones it has not walked past with this
// set of buckets. It reports true when refill should look again.
func (q *queue[T]) healBuckets(ctx context.Context, ver int32) (bool, error) {
	bs, err := q.buckets(ctx)
	if err != nil || len(bs) == 0 {
		return false, err
	}
	if bs[len(bs)-1] != q.bucket {
		bp := q.bucketPath(q.bucket)
		_, err := await(ctx, q.s, func() (*zk.Stat, error) { return q.s.conn.Set(bp, []byte(sealedData), ver) })
		if err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			return false, opError("seal", bp, err)
		}
		q.s.log.Debug("sealed a stale open queue bucket", "path", bp)
		return true, nil
	}
	if key := strings.Join(bs, ","); bs[0] < q.bucket && key != q.walked {
		q.walked = key
		q.bucket = ""
		q.dw, q.dwBucket = nil, ""
		return true, nil
	}
	return false, nil
}

// waitDir waits for the queue directory to get its first bucket.
func (q *queue[T]) waitDir(ctx context.Context) error {
	r, err := q.s.childrenW(ctx, q.dir)
	var w <-chan zk.Event
	switch {
	case errors.Is(err, zk.ErrNoNode):
		ok, _, ch, err := q.s.existsW(ctx, q.dir)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		w = ch
	case err != nil:
		return err
	case len(sortBuckets(r.kids)) > 0:
		return nil
	default:
		w = r.watch
	}
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-q.s.done:
		return q.s.Err()
	}
}

// advance moves the consumer to the bucket after the current one, or back
// to the lowest when there is none.
func (q *queue[T]) advance(ctx context.Context) error {
	cur := q.bucket
	q.bucket = ""
	bs, err := q.buckets(ctx)
	if err != nil {
		return err
	}
	for _, b := range bs {
		if b > cur {
			q.bucket = b
			return nil
		}
	}
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

// dropReleased removes from busy the items not among claims and reports
// whether there were any (then the walk restarts from the lowest bucket).
func (q *queue[T]) dropReleased(claims []string) bool {
	live := make(map[string]bool, len(claims))
	for _, c := range claims {
		live[c] = true
	}
	dropped := false
	for p := range q.busy {
		if !live[q.claimName(p)] {
			delete(q.busy, p)
			dropped = true
		}
	}
	if dropped {
		q.bucket = ""
		q.cache, q.pos, q.watch = nil, 0, nil
	}
	return dropped
}

// claimName is the claim node name of an item path: <bucket>.<item>.
func (q *queue[T]) claimName(item string) string {
	rel := strings.TrimPrefix(item, q.dir+"/")
	return strings.Replace(rel, "/", ".", 1)
}

// fetched is the data of one candidate item.
type fetched struct {
	path string
	data []byte
	ver  int32
	err  error
}

// fetch reads the candidates' data concurrently (go-zookeeper pipelines
// requests on the connection). The data of an inline item comes from its
// name; it is read only when verify is set (to learn that it still exists),
// otherwise its version is given as -1 (items are never modified).
func (q *queue[T]) fetch(ctx context.Context, paths []string, items []qitem, verify bool) []fetched {
	out := make([]fetched, len(paths))
	var reads []int
	for i, it := range items {
		if it.hasIn {
			out[i] = fetched{path: paths[i], data: it.inline, ver: -1}
			if !verify {
				continue
			}
		}
		reads = append(reads, i)
	}
	if len(reads) == 0 {
		return out
	}
	parallel(len(reads), 32, func(k int) {
		i := reads[k]
		d, st, err := q.s.get(ctx, paths[i])
		if items[i].hasIn {
			d = items[i].inline
		}
		out[i] = fetched{path: paths[i], data: d, err: err}
		if st != nil {
			out[i].ver = st.Version
		}
	})
	return out
}

// parallel runs fn(0..n-1) on up to workers goroutines and waits.
func parallel(n, workers int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(n, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// deleteAll takes candidates at most once: it reads and decodes them, then
// deletes them in one multi together with a marker node (so a connection
// loss during the multi is resolved, not guessed). Items deleted by another
// consumer meanwhile (a lost race) are skipped. Undecodable items are left
// in place and reported with their path.
//
// It runs detached from the caller's ctx (bounded by cleanupTimeout and the
// session): once items are being taken, the outcome must be known so that
// none is removed without being delivered.
func (q *queue[T]) deleteAll(ctx context.Context, bucket string, cands []qitem) ([]*Delivery[T], error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	bp := q.bucketPath(bucket)
	paths := make([]string, len(cands))
	for i, c := range cands {
		paths[i] = joinPath(bp, c.name)
	}
	var errs []error
	var keep []fetched
	var vals []T
	for _, f := range q.fetch(ctx, paths, cands, false) {
		switch {
		case errors.Is(f.err, zk.ErrNoNode):
			q.raced()
			continue // taken by another consumer
		case f.err != nil:
			return nil, f.err
		}
		v, err := q.codec.Decode(f.data)
		if err != nil {
			q.poison[f.path] = true
			errs = append(errs, fmt.Errorf("queue item %s (left in place): %w", f.path, err))
			continue
		}
		keep, vals = append(keep, f), append(vals, v)
	}
	marker := q.newMarker()
	for attempt := 1; len(keep) > 0; attempt++ {
		ops := make([]any, 0, len(keep)+2)
		ops = append(ops, &zk.CreateRequest{Path: marker, Flags: zk.FlagEphemeral, Acl: q.s.nodeACL(q.acl)})
		old := q.cmark.path
		if old != "" {
			ops = append(ops, &zk.DeleteRequest{Path: old, Version: -1})
		}
		first := len(ops) // index of the first item's delete
		for _, f := range keep {
			ops = append(ops, &zk.DeleteRequest{Path: f.path, Version: f.ver})
		}
		res, err := await(ctx, q.s, func() ([]zk.MultiResponse, error) { return q.s.connMulti(ops...) })
		if err == nil {
			q.cmark.path = marker
			break
		}
		if IsRecoverable(err) && ctx.Err() == nil {
			ok, rerr := q.recoverMarker(ctx, marker, attempt, err, ErrTakeUncertain)
			if rerr != nil {
				return nil, rerr
			}
			if ok {
				q.cmark.path = marker // the multi deleted the old one
				break
			}
			continue
		}
		i := firstFailed(res)
		switch {
		case i == 0 && errors.Is(err, zk.ErrNoNode):
			if err := q.s.ensurePath(ctx, q.acl, joinPath(q.dir, marksDir)); err != nil {
				return nil, err
			}
		case i == 1 && old != "" && errors.Is(err, zk.ErrNoNode):
			q.cmark.path = "" // the old marker is gone already (reaped)
		case i >= first && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion)):
			q.raced()
			keep = append(keep[:i-first], keep[i-first+1:]...) // lost the race for this one
			vals = append(vals[:i-first], vals[i-first+1:]...)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("queue %s: take timed out, %d items may have been removed undelivered: %w", q.dir, len(keep), ctx.Err())
		default:
			return nil, opError("multi", bp, err)
		}
	}
	out := make([]*Delivery[T], len(keep))
	for i, f := range keep {
		out[i] = &Delivery[T]{Value: vals[i], q: q, node: f.path, done: true}
	}
	return out, errors.Join(errs...)
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
			q.busy[c.path] = true
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
				q.poison[c.path] = true
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
