package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// take returns between 1 and n items, blocking until there is one, on a
// machine of the session's pool.
func (q *queue[T]) take(ctx context.Context, n int) ([]*Delivery[T], error) {
	if q.pool == nil {
		return q.takeOn(ctx, n)
	}
	m := q.pool.borrow(takeSide)
	defer q.pool.give(takeSide, m)
	return m.takeOn(ctx, n)
}

// takeOn returns between 1 and n items, blocking until there is one. Items
// come from the cached listing of the current bucket; the bucket is listed
// again only when that listing is used up (or, for a priority queue, when
// its child watch fired).
func (q *queue[T]) takeOn(ctx context.Context, n int) (ds []*Delivery[T], err error) {
	defer q.telOp(ctx, opQueueTake, false).end(&err)
	if n < 1 {
		return nil, fmt.Errorf("queue %s: take of %d items", q.dir, n)
	}
	if ds, err := q.takeBuffered(n); ds != nil || err != nil {
		return ds, err
	}
	if err := checkSpec(ctx, q.s, q.dir, q.record()); err != nil {
		return nil, err
	}
	if err := q.lock(ctx, &q.cons.side); err != nil {
		return nil, err
	}
	defer q.unlock(&q.cons.side)
	q.stopLinger()
	defer q.lingerOwn()
	if ds, err := q.fromBuffer(n); ds != nil || err != nil {
		return ds, err
	}
	want := q.batchOf(n)
	if q.cons.noWait {
		q.cons.waits = nil
	}
	for {
		q.checkCache()
		if q.cons.pos >= len(q.cons.cache) || q.staleCache() {
			if err := q.refill(ctx); err != nil {
				return nil, err
			}
			continue
		}
		k := n
		if q.delay {
			due, err := q.dueItems(ctx)
			if err != nil {
				return nil, err
			}
			if due == 0 {
				continue // waited: look again
			}
			k = min(n, due)
		}
		began := time.Now()
		out, err := q.takeCached(ctx, max(k, want))
		if len(out) > 0 {
			q.tookItems()
		}
		if len(out) > 0 || err != nil {
			return q.keep(out, n, err)
		}
		if err := q.standBack(ctx, began); err != nil {
			return nil, err
		}
	}
}

// standBack follows an attempt begun at began that lost the race for every
// candidate (consumers going for the same items in step; not spread or
// prefetching consumers, which go for different ones): it waits a random
// part of the time the attempt took (a round trip, as loaded as the server
// is), so the winner takes the next ones alone instead of all sending
// deletes of which one succeeds.
func (q *queue[T]) standBack(ctx context.Context, began time.Time) error {
	if q.ack || q.prefetching() || q.spreads() {
		return nil
	}
	if d := time.Since(began); d > 0 {
		return opsOf(q.s).Sleep(ctx, time.Duration(opsOf(q.s).Rand().Int64N(int64(d))))
	}
	return nil
}

// checkCache drops the cached listing when it must be listed again before
// it is served: an item this handle had was given back (walk again from
// the lowest bucket so it is served in its turn), or, for a delay queue,
// the listing changed and an item due earlier may have arrived.
func (q *queue[T]) checkCache() {
	c := &q.cons
	if c.released.Swap(false) {
		c.cache, c.pos, c.watch, c.bucket = nil, 0, nil, ""
	}
	if !q.delay || c.pos >= len(c.cache) {
		return
	}
	changed := c.watch == nil
	if !changed {
		select {
		case <-c.watch: // something changed: an item due earlier may have arrived
			changed = true
		default:
		}
	}
	if changed {
		c.cache, c.pos, c.watch = nil, 0, nil
	}
}

// dueItems returns how many items of a delay queue's cached listing, from
// the consumer's position on, are due by this consumer's clock. When the
// first is not due yet it waits, without polling, until it is (a timer),
// until the listing's child watch fires (an item due earlier may have
// arrived: the listing is dropped) or until a claim of another consumer
// vanishes, and returns 0 to look again.
func (q *queue[T]) dueItems(ctx context.Context) (int, error) {
	c := &q.cons
	now := time.Now().UnixMilli()
	due := 0
	for _, it := range c.cache[c.pos:] {
		if it.due > now {
			break
		}
		due++
	}
	if due > 0 {
		return due, nil
	}
	claimsW, again, err := q.claimsWatch(ctx)
	if again || err != nil {
		return 0, err
	}
	timer := time.NewTimer(time.Until(time.UnixMilli(c.cache[c.pos].due)))
	defer timer.Stop()
	defer q.flushWhileWaiting()()
	var changed, claims bool
	select {
	case <-timer.C:
	case <-c.watch:
		changed = true
	case <-claimsW:
		claims = true
	case <-ctx.Done():
	case <-q.s.Done():
	}
	// Every change ready at this instant is taken (see waitOpen).
	changed = ready(c.watch) || changed
	claims = ready(claimsW) || claims
	if changed {
		c.cache, c.pos, c.watch = nil, 0, nil
	}
	if err := ended(ctx, q.s); err != nil {
		return 0, err
	}
	if claims {
		return 0, q.refreshBusy(ctx)
	}
	return 0, nil
}

// takeCached takes up to n items of the cached listing, at most once or at
// least once. It returns no item and no error when every candidate was
// lost to other consumers.
func (q *queue[T]) takeCached(ctx context.Context, n int) ([]*Delivery[T], error) {
	c := &q.cons
	var cands []qitem
	var chunk string
	switch {
	case q.prefetching():
		var err error
		if cands, chunk, err = q.claimChunk(ctx, n); err != nil || len(cands) == 0 {
			return nil, err
		}
	case q.spreads() && c.spread.on:
		var err error
		if cands, chunk, err = q.spreadCands(ctx, n); err != nil || len(cands) == 0 {
			return nil, err
		}
	default:
		end := min(c.pos+n, len(c.cache))
		cands = c.cache[c.pos:end]
		c.pos = end
	}
	var out []*Delivery[T]
	var err error
	if q.ack {
		out, err = q.claimAll(ctx, c.bucket, cands)
		if chunk != "" {
			// The candidates end the chunk's listed items: each is claimed
			// (or busy) on its own now.
			q.dropOwn(chunk)
		}
	} else {
		out, err = q.deleteAll(ctx, c.bucket, cands, chunk)
	}
	if q.ack && ctx.Err() != nil {
		// The caller gave up while the claims were being made: give them
		// back rather than leave them to the session's end.
		for _, d := range out {
			q.unclaim(d.claim)
		}
		return nil, ctx.Err()
	}
	if c.pos >= len(c.cache) && c.sealed {
		// Used up a sealed bucket: remove it now if it is empty, so a
		// drained queue leaves only its open bucket behind.
		if gone, err := q.dropBucket(ctx, c.bucket); err == nil && gone {
			c.cache, c.pos, c.watch, c.sealed = nil, 0, nil, false
			if err := q.advance(ctx); err != nil && len(out) == 0 {
				return nil, err
			}
		}
	}
	return out, err
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
	err = opsOf(q.s).Delete(ctx, q.bucketPath(b), -1)
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
	c := &q.cons
	c.cache, c.pos, c.watch, c.sealed, c.stale = nil, 0, nil, false, 0
	if err := q.retryClaimed(ctx); err != nil {
		return err
	}
	if c.bucket == "" {
		bs, err := q.buckets(ctx)
		if err != nil {
			return err
		}
		if len(bs) == 0 {
			return q.waitDir(ctx)
		}
		c.bucket = bs[0]
	}
	bp := q.bucketPath(c.bucket)
	list := opsOf(q.s).ChildrenW
	if c.noWait && c.plain {
		// A priority queue's level that had items: its listing's watch
		// would only cost a notification at the next put or take.
		list = opsOf(q.s).ChildrenStat
	}
	r, err := list(ctx, bp)
	if errors.Is(err, zk.ErrNoNode) {
		return q.advance(ctx) // drained and deleted by another consumer
	}
	if err != nil {
		return err
	}
	c.sealed = r.Stat.Version > 0
	items := q.servable(bp, r.Kids, c.sealed)
	c.plain = len(items) > 0
	if len(items) > 0 {
		c.cache, c.watch = items, r.Watch
		return nil
	}
	if c.sealed {
		return q.passSealed(ctx, len(r.Kids))
	}
	if r.Watch == nil {
		return nil // list again, with a watch to wait on
	}
	if again, err := q.healBuckets(ctx, r.Stat.Version); again || err != nil {
		return err
	}
	return q.waitOpen(ctx, bp, r.Watch)
}

// retryClaimed looks again at what an at-least-once consumer skipped: items
// claimed by others whose claims vanished, and sealed buckets it could not
// drop because of such items.
func (q *queue[T]) retryClaimed(ctx context.Context) error {
	c := &q.cons
	if len(c.busy) > 0 {
		if err := q.refreshBusy(ctx); err != nil {
			return err
		}
	}
	for _, b := range slices.Sorted(maps.Keys(c.pendingDrop)) { // one order of requests on a replay
		if gone, err := q.dropBucket(ctx, b); err != nil || gone {
			delete(c.pendingDrop, b)
		}
	}
	return nil
}

// servable keeps the items of bucket bp's listing kids that this consumer
// may take, in serving order: not undecodable, not claimed by others. The
// items of others' chunks in a sealed bucket, which the consumer is about
// to pass, are noted busy like items claimed by others (so that it comes
// back for them when their claim goes, see retryClaimed).
func (q *queue[T]) servable(bp string, kids []string, sealed bool) []qitem {
	var items []qitem
	q.cons.spread.skipped = 0
	for _, it := range sortItems(kids) {
		p := joinPath(bp, it.name)
		if q.chunkBusy(it) {
			q.cons.spread.skipped++
			if sealed {
				q.cons.busy[p] = chunkName(q.cons.bucket, spreadChunk, it.seq)
			}
			continue
		}
		if _, busy := q.cons.busy[p]; !q.cons.poison[p] && !busy {
			items = append(items, it)
		}
	}
	return items
}

// passSealed moves on from the current bucket, sealed, whose final listing
// of kids children has nothing for this consumer, removing the bucket once
// it is empty.
func (q *queue[T]) passSealed(ctx context.Context, kids int) error {
	c := &q.cons
	if kids == 0 {
		if _, err := q.dropBucket(ctx, c.bucket); err != nil {
			return err
		}
	} else if len(c.busy) > 0 {
		// Only items claimed by others (or undecodable) are left: try
		// again later, once their consumers have acked them.
		c.pendingDrop[c.bucket] = true
	}
	return q.advance(ctx)
}

// waitOpen waits while the current bucket bp, open, has nothing for this
// consumer: for a new item (listWatch, the listing's child watch), for the
// bucket to be sealed (a data watch), or for a claim to vanish. The data
// watch is set once per bucket and kept until it fires, so repeated waits
// on one bucket do not pile up watches. It returns nil to look again.
func (q *queue[T]) waitOpen(ctx context.Context, bp string, listWatch <-chan zk.Event) error {
	c := &q.cons
	if c.dwBucket == c.bucket && c.dw != nil {
		select {
		case <-c.dw:
			c.dw = nil
			return nil // the bucket changed (sealed): look again
		default:
		}
	} else {
		d, err := opsOf(q.s).GetW(ctx, bp)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Stat.Version > 0 {
			return nil
		}
		c.dwBucket, c.dw = c.bucket, d.Watch
	}
	claimsW, again, err := q.claimsWatch(ctx)
	if again || err != nil {
		return err
	}
	if c.noWait {
		return q.noWait(listWatch, c.dw, claimsW, q.stuckLevel())
	}
	defer q.flushWhileWaiting()()
	stuck, stop := q.stuckChunks()
	defer stop()
	return q.waitChange(ctx, listWatch, claimsW, stuck)
}

// waitChange waits for a change of the open bucket the consumer waits on
// (see waitOpen), and takes every change ready at that instant, in one
// order, not the one select picked at random: the rest would be found on
// the next pass, with requests of their own, so a seed's replay would make
// other requests (docs/reliability.md, "How deterministic a replay is").
func (q *queue[T]) waitChange(ctx context.Context, listWatch, claimsW <-chan zk.Event, stuck <-chan time.Time) error {
	c := &q.cons
	var dw, claims, held bool
	select {
	case <-listWatch:
	case <-c.dw:
		dw = true
	case <-claimsW:
		claims = true
	case <-stuck:
		held = true
	case <-ctx.Done():
	case <-q.s.Done():
	}
	if ready(c.dw) || dw {
		c.dw = nil
	}
	claims = ready(claimsW) || claims
	held = ready(stuck) || held
	if err := ended(ctx, q.s); err != nil {
		return err
	}
	if held {
		q.unspread()
	}
	if claims {
		return q.refreshBusy(ctx)
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
	if bs[len(bs)-1] != q.cons.bucket {
		bp := q.bucketPath(q.cons.bucket)
		_, err := client.Await(ctx, q.s, func() (*zk.Stat, error) { return q.s.Conn().Set(bp, []byte(sealedData), ver) })
		if err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			return false, client.OpError("seal", bp, err)
		}
		opsOf(q.s).Log().Debug("sealed a stale open queue bucket", "path", bp)
		return true, nil
	}
	if key := strings.Join(bs, ","); bs[0] < q.cons.bucket && key != q.cons.walked {
		q.cons.walked = key
		q.cons.bucket = ""
		q.cons.dw, q.cons.dwBucket = nil, ""
		return true, nil
	}
	return false, nil
}

// waitDir waits for the queue directory to get its first bucket.
func (q *queue[T]) waitDir(ctx context.Context) error {
	r, err := opsOf(q.s).ChildrenW(ctx, q.dir)
	var w <-chan zk.Event
	switch {
	case errors.Is(err, zk.ErrNoNode):
		ok, _, ch, err := opsOf(q.s).ExistsW(ctx, q.dir)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		w = ch
	case err != nil:
		return err
	case len(sortBuckets(r.Kids)) > 0:
		return nil
	default:
		w = r.Watch
	}
	if q.cons.noWait {
		return q.noWait(w)
	}
	defer q.flushWhileWaiting()()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-q.s.Done():
		return q.s.Err()
	}
}

// noWait ends a take in noWait mode (a priority queue's level) where it
// would wait on ws: it keeps them in cons.waits and returns errLevelEmpty.
func (q *queue[T]) noWait(ws ...<-chan zk.Event) error {
	for _, w := range ws {
		if w != nil {
			q.cons.waits = append(q.cons.waits, w)
		}
	}
	return errLevelEmpty
}

// advance moves the consumer to the bucket after the current one, or back
// to the lowest when there is none.
func (q *queue[T]) advance(ctx context.Context) error {
	cur := q.cons.bucket
	q.cons.bucket = ""
	bs, err := q.buckets(ctx)
	if err != nil {
		return err
	}
	for _, b := range bs {
		if b > cur {
			q.cons.bucket = b
			return nil
		}
	}
	return nil
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
	opsOf(q.s).Parallel(len(reads), 32, func(k int) {
		i := reads[k]
		d, st, err := opsOf(q.s).Get(ctx, paths[i])
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

// deleteAll takes candidates at most once: it reads and decodes them, then
// deletes them in one multi together with a marker node (so a connection
// loss during the multi is resolved, not guessed). Items deleted by another
// consumer meanwhile (a lost race) are skipped. Undecodable items are left
// in place and reported with their path.
//
// It runs detached from the caller's ctx (bounded by cleanupTimeout and the
// session): once items are being taken, the outcome must be known so that
// none is removed without being delivered.
//
// chunk, when not empty, is the path of this consumer's claim on the
// candidates' chunk (prefetch, queue_prefetch.go): the multi deletes it with
// the items, or it is deleted alone when nothing is taken.
func (q *queue[T]) deleteAll(ctx context.Context, bucket string, cands []qitem, chunk string) ([]*Delivery[T], error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
	defer cancel()
	bp := q.bucketPath(bucket)
	b, errs, err := q.readBatch(ctx, bp, cands)
	if err == nil {
		b.chunk = chunk
		marker := q.newMarker()
		err = q.markedMulti(ctx, marker, &q.cons.mark, ErrTakeUncertain, func() (client.Outcome, error) {
			return q.deleteOnce(ctx, bp, marker, b)
		})
	}
	if chunk != "" && (err != nil || len(b.items) == 0) && q.s.Err() == nil {
		q.releaseClaim(chunk)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*Delivery[T], len(b.items))
	for i, f := range b.items {
		out[i] = &Delivery[T]{Value: b.vals[i], q: q, node: f.path, once: settleOnce{done: true}}
		if chunk != "" {
			out[i].data = f.data // to give it back (queue_prefetch.go)
		}
	}
	return out, client.JoinErrors(errs...)
}

// batch is what an at-most-once take deletes: the items and their decoded
// values.
type batch[T any] struct {
	items []fetched
	vals  []T
	chunk string // the consumer's chunk claim, deleted with the items (prefetch)
}

// drop leaves out item i (lost to another consumer).
func (b *batch[T]) drop(i int) {
	b.items = append(b.items[:i], b.items[i+1:]...)
	b.vals = append(b.vals[:i], b.vals[i+1:]...)
}

// readBatch reads and decodes the candidates of bucket bp. Items deleted by
// another consumer meanwhile (a lost race) are skipped; undecodable ones
// are left in place and reported in errs.
func (q *queue[T]) readBatch(ctx context.Context, bp string, cands []qitem) (b *batch[T], errs []error, err error) {
	paths := make([]string, len(cands))
	for i, c := range cands {
		paths[i] = joinPath(bp, c.name)
	}
	b = &batch[T]{}
	for _, f := range q.fetch(ctx, paths, cands, false) {
		switch {
		case errors.Is(f.err, zk.ErrNoNode):
			q.raced()
			continue // taken by another consumer
		case f.err != nil:
			return nil, nil, f.err
		}
		v, err := q.codec.Decode(f.data)
		if err != nil {
			q.cons.poison[f.path] = true
			errs = append(errs, fmt.Errorf("queue item %s (left in place): %w", f.path, err))
			continue
		}
		b.items, b.vals = append(b.items, f), append(b.vals, v)
	}
	return b, errs, nil
}

// deleteOnce is one attempt of deleteAll: one multi that creates marker,
// deletes the previous take's marker (if any) and deletes the items of b.
// An item lost to another consumer is dropped from b, and the rest sent
// again.
func (q *queue[T]) deleteOnce(ctx context.Context, bp, marker string, b *batch[T]) (client.Outcome, error) {
	if len(b.items) == 0 {
		return client.OutcomeKnown, nil
	}
	ops := make([]any, 0, len(b.items)+2)
	ops = append(ops, &zk.CreateRequest{Path: marker, Flags: zk.FlagEphemeral, Acl: opsOf(q.s).NodeACL(q.acl)})
	old := q.cons.mark.path
	if old != "" {
		ops = append(ops, &zk.DeleteRequest{Path: old, Version: -1})
	}
	if b.chunk != "" {
		ops = append(ops, &zk.DeleteRequest{Path: b.chunk, Version: -1})
	}
	first := len(ops) // index of the first item's delete
	for _, f := range b.items {
		ops = append(ops, &zk.DeleteRequest{Path: f.path, Version: f.ver})
	}
	res, err := client.Await(ctx, q.s, func() ([]zk.MultiResponse, error) { return opsOf(q.s).ConnMulti(ops...) })
	if err == nil {
		q.cons.mark.path = marker
		return client.OutcomeKnown, nil
	}
	if IsRecoverable(err) && ctx.Err() == nil {
		return client.OutcomeHidden, err
	}
	if res == nil && (errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrClosed) || errors.Is(err, zk.ErrSessionExpired)) {
		// The session ended under the multi (await reports the session's
		// end for a connection closed then): the server may have applied
		// it, and the marker can no longer tell. Said as known, the items
		// would be lost without a word (TestSoak, seed
		// 1795424341818267186: a take cut after its multi reached the
		// server, the session ended meanwhile).
		return client.OutcomeKnown, fmt.Errorf("queue %s: %w: %w", q.dir, ErrTakeUncertain, err)
	}
	switch i, _ := client.FailedOp(res); {
	case i == 0 && errors.Is(err, zk.ErrNoNode):
		if err := opsOf(q.s).EnsurePath(ctx, q.acl, joinPath(q.dir, marksDir)); err != nil {
			return client.OutcomeKnown, err
		}
	case i == 1 && old != "" && errors.Is(err, zk.ErrNoNode):
		q.cons.mark.path = "" // the old marker is gone already (reaped)
	case i == first-1 && b.chunk != "" && errors.Is(err, zk.ErrNoNode):
		b.chunk = "" // the chunk claim is gone already (released)
	case i >= first && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion)):
		q.raced()
		b.drop(i - first) // lost the race for this one
	case ctx.Err() != nil:
		return client.OutcomeKnown, fmt.Errorf("queue %s: take timed out, %d items may have been removed undelivered: %w", q.dir, len(b.items), ctx.Err())
	default:
		return client.OutcomeKnown, client.OpError("multi", bp, err)
	}
	return client.OutcomeResend, nil
}

// raced records a race lost to another consumer: an item of the listing
// was taken by someone else. What lost races cost is bounded by refreshing
// a listing proved stale.
func (q *queue[T]) raced() {
	q.cons.stale++
	q.contended()
}

// staleCache reports whether listing the bucket again is cheaper than
// walking the rest of the cached listing: every item another consumer took
// costs a wasted read when this one reaches it, while a listing costs one
// request whose reply holds the remaining names (about 25 bytes each). So a
// short listing is refreshed as soon as it proved stale, a long one only
// after a proportionate number of wasted reads.
func (q *queue[T]) staleCache() bool {
	return q.cons.stale > 0 && q.cons.stale*staleRatio >= len(q.cons.cache)-q.cons.pos
}

// staleRatio is how many cached names one wasted read is worth.
const staleRatio = 128
