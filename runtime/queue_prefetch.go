package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Prefetch (WithPrefetch)
//
// A single Take of an at-most-once FIFO queue costs a read of the item and
// a multi that deletes it: with the put, three requests an item, each a
// round trip, and several consumers race for the same head. A consumer
// with a prefetch of k instead takes up to k items in one go when it has
// none left: it claims their chunk (the items whose sequence numbers divided
// by k are equal) with an ephemeral node, in a multi that checks the items
// still exist, so that other prefetching consumers skip the chunk instead
// of racing for it (claimChunk); it reads them concurrently (one round
// trip) and deletes them with the claim and its marker in one multi, as
// TakeN does; then it serves the following Takes from memory. An item then
// costs its put, its read and about two k-ths of a multi.
//
// Items so prefetched are out of ZooKeeper and in a buffer that every
// handle of the queue on the session shares (a generated Client returns a
// new handle at each call, and c.Jobs().Take must not leave the rest of a
// chunk behind in a handle nobody calls again). Take serves them before
// anything else, even once its ctx or the session has
// ended, so a consumer that keeps calling Take until it gets an error loses
// none. Session.Close gives the buffered items back before it closes the
// session: each is created again under its own name (so it keeps its place
// in the queue), or, when its bucket is gone, put again at the tail. What a
// process holds when it dies is lost: at most k-1 items a consumer, the
// price of the prefetch; with the default of 1 nothing is buffered.

// WithPrefetch makes an at-most-once FIFO queue handle take up to n items
// at a time when the buffer is empty and serve the next Takes from the
// buffer (see the prefetch notes in queue_prefetch.go): fewer requests and
// round trips an item, at the risk of losing up to n-1 taken items if the
// process dies before it calls Take for them. The buffer is the session's:
// every prefetching handle of the queue on the session (with the same item
// type) serves from it, so a handle made for one Take and dropped leaves
// nothing stranded. Session.Close gives buffered items back. Peek shows the buffer's oldest item first; Len and Stats
// count only what is in ZooKeeper (not what any handle holds). n <= 1 (the
// default) buffers nothing. Ignored by priority, delay and at-least-once
// queues. Consumers of one queue with the same n skip each other's chunks
// (one ephemeral claim each, <dir>/claims/<bucket>.k<n>-<index>).
func WithPrefetch(n int) QueueOption {
	return queueOptionFunc(func(c *queueConfig) { c.prefetch = n })
}

// prefetching reports whether the queue buffers prefetched items.
func (c queueConfig) prefetching() bool {
	return c.prefetch > 1 && !c.ack && !c.priority && !c.delay
}

// prefetchBuf is the prefetched items of one queue on one session.
type prefetchBuf[T any] struct {
	mu         sync.Mutex
	items      []*Delivery[T]
	err        error  // the take's error of the items, returned once they are used up
	unregister func() // removes the buffer's give-back from the session; nil while empty
}

// bufKey names a queue's buffer on a session: its directory, and its item
// type (handles with different codecs cannot share decoded items).
type bufKey struct {
	dir string
	typ reflect.Type
}

// sharedBuf returns the session's buffer of the queue at dir for items of
// type T, creating it on first use.
func sharedBuf[T any](s *Session, dir string) *prefetchBuf[T] {
	return client.Shared(s, bufKey{dir: dir, typ: reflect.TypeFor[T]()}, func() *prefetchBuf[T] { return &prefetchBuf[T]{} })
}

// takeBuffered returns up to n buffered items without waiting for ctx or
// the session: items already taken are handed out even after they ended.
// It returns nil when the buffer is empty.
func (q *queue[T]) takeBuffered(n int) ([]*Delivery[T], error) {
	if !q.prefetching() || q.err != nil {
		return nil, nil
	}
	return q.fromBuffer(n)
}

// peekBuffer returns the oldest buffered item, if any, without taking it.
func (q *queue[T]) peekBuffer(context.Context) (v T, ok bool) {
	if !q.prefetching() {
		return v, false
	}
	q.pb.mu.Lock()
	defer q.pb.mu.Unlock()
	if len(q.pb.items) == 0 {
		return v, false
	}
	return q.pb.items[0].Value, true
}

// batchOf is how many items a take of n asks ZooKeeper for: n, or the
// prefetch when it is larger.
func (q *queue[T]) batchOf(n int) int {
	if q.prefetching() {
		return max(n, min(q.prefetch, maxBatchOps))
	}
	return n
}

// fromBuffer returns up to n buffered items, oldest first; once the buffer
// is empty, the error its chunk's take had (undecodable items left in
// place), if not reported yet; else nothing.
func (q *queue[T]) fromBuffer(n int) ([]*Delivery[T], error) {
	if q.pb == nil {
		return nil, nil
	}
	b := q.pb
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.items) == 0 {
		err := b.err
		b.err = nil
		return nil, err
	}
	k := min(n, len(b.items))
	out := b.items[:k:k]
	b.items = b.items[k:]
	if len(b.items) == 0 {
		b.items = nil
		b.unregister()
		b.unregister = nil
	}
	return out, nil
}

// keep buffers the deliveries ds beyond the first n, and returns the first
// n. The buffer is registered with the session so that Close gives it
// back. A prefetching take's error err that came with items (undecodable
// ones left in place) is kept until the buffer is used up: returned with
// items, a caller would drop them.
func (q *queue[T]) keep(ds []*Delivery[T], n int, err error) ([]*Delivery[T], error) {
	if !q.prefetching() {
		return ds, err
	}
	b := q.pb
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil && len(ds) > 0 {
		b.err, err = err, nil
	}
	if len(ds) <= n {
		return ds, err
	}
	b.items = append(b.items, ds[n:]...)
	if b.unregister == nil {
		b.unregister = client.OnClose(q.s, func(ctx context.Context) error { q.giveBack(ctx); return nil }, nil)
	}
	return ds[:n:n], err
}

// giveBack returns the buffered items to the queue, each under its own name
// where its bucket still exists, at the tail otherwise. Session.Close runs
// it before closing the session. Items it cannot give back are lost (and
// logged).
func (q *queue[T]) giveBack(ctx context.Context) {
	if err := q.lock(ctx, &q.cons.side); err != nil {
		opsOf(q.s).Log().Warn("could not give prefetched queue items back", "queue", q.dir, "err", err)
		return
	}
	defer q.unlock(&q.cons.side)
	b := q.pb
	b.mu.Lock()
	ds := b.items
	b.items = nil
	if b.unregister != nil {
		b.unregister()
		b.unregister = nil
	}
	b.mu.Unlock()
	if len(ds) == 0 {
		return
	}
	tail, err := q.recreate(ctx, ds)
	if err == nil && len(tail) > 0 {
		datas := make([][]byte, len(tail))
		for i, d := range tail {
			datas[i] = d.data
		}
		err = q.putGivenBack(ctx, datas)
		if err == nil {
			tail = nil
		}
	}
	if err != nil {
		opsOf(q.s).Log().Warn("could not give prefetched queue items back", "queue", q.dir, "items", len(ds), "err", err)
		return
	}
	opsOf(q.s).Log().Debug("gave prefetched queue items back", "queue", q.dir, "items", len(ds), "at_tail", len(tail))
}

// recreate creates the items ds again under their own names, in one multi
// with a marker (so a lost reply is settled, not guessed). Items whose
// bucket is gone are returned, to be put at the tail.
func (q *queue[T]) recreate(ctx context.Context, ds []*Delivery[T]) (tail []*Delivery[T], err error) {
	for len(ds) > 0 {
		marker := q.newMarker()
		var failed int
		err := q.markedMulti(ctx, marker, &q.cons.mark, ErrPutUncertain, func() (client.Outcome, error) {
			out, i, err := q.recreateOnce(ctx, marker, ds)
			failed = i
			return out, err
		})
		switch {
		case errors.Is(err, errBucketGone):
			tail = append(tail, ds[failed])
			ds = append(ds[:failed:failed], ds[failed+1:]...)
		case err != nil:
			return nil, err
		default:
			return tail, nil
		}
	}
	return tail, nil
}

// errBucketGone means an item given back had no bucket to return to.
var errBucketGone = errors.New("queue: bucket gone")

// recreateOnce is one attempt of recreate: a multi that creates marker,
// deletes the consumer's previous marker and creates every item of ds
// under its name. It returns the index of an item whose bucket is gone
// with errBucketGone.
func (q *queue[T]) recreateOnce(ctx context.Context, marker string, ds []*Delivery[T]) (client.Outcome, int, error) {
	if err := q.s.Err(); err != nil {
		return client.OutcomeKnown, 0, err
	}
	ops := []any{&zk.CreateRequest{Path: marker, Flags: zk.FlagEphemeral, Acl: opsOf(q.s).NodeACL(q.acl)}}
	old := q.cons.mark.path
	if old != "" {
		ops = append(ops, &zk.DeleteRequest{Path: old, Version: -1})
	}
	first := len(ops)
	for _, d := range ds {
		data := d.data
		if it, ok := parseItem(d.node[strings.LastIndexByte(d.node, '/')+1:]); ok && it.hasIn {
			data = nil // the name carries it
		}
		ops = append(ops, &zk.CreateRequest{Path: d.node, Data: data, Acl: opsOf(q.s).NodeACL(q.acl)})
	}
	res, err := client.Await(ctx, q.s, func() ([]zk.MultiResponse, error) { return opsOf(q.s).ConnMulti(ops...) })
	if err == nil {
		q.cons.mark.path = marker
		return client.OutcomeKnown, 0, nil
	}
	if IsRecoverable(err) {
		return client.OutcomeHidden, 0, err
	}
	switch i, _ := client.FailedOp(res); {
	case i == 0 && errors.Is(err, zk.ErrNoNode):
		if err := opsOf(q.s).EnsurePath(ctx, q.acl, joinPath(q.dir, marksDir)); err != nil {
			return client.OutcomeKnown, 0, err
		}
	case i == 1 && old != "" && errors.Is(err, zk.ErrNoNode):
		q.cons.mark.path = ""
	case i >= first && errors.Is(err, zk.ErrNoNode):
		return client.OutcomeKnown, i - first, errBucketGone
	default:
		return client.OutcomeKnown, 0, client.OpError("multi", q.dir, err)
	}
	return client.OutcomeResend, 0, nil
}

// putGivenBack puts datas at the tail of the queue (items given back whose
// bucket is gone), as Put does.
func (q *queue[T]) putGivenBack(ctx context.Context, datas [][]byte) error {
	if err := q.lock(ctx, &q.prod.side); err != nil {
		return err
	}
	defer q.unlock(&q.prod.side)
	if _, err := q.openBucket(ctx); err != nil && !errors.Is(err, errRetryPut) {
		return err
	}
	if err := q.putChunk(ctx, 0, datas); err != nil {
		return fmt.Errorf("queue %s: putting back %d prefetched items: %w", q.dir, len(datas), err)
	}
	return nil
}

// chunkName is the name, in the claims directory, of a prefetching
// consumer's claim on the items of bucket whose sequence numbers divided by
// k give idx: <bucket>.k<k>-<idx>. Consumers with the same prefetch agree
// on the chunks.
func chunkName(bucket string, k int, seq int32) string {
	return fmt.Sprintf("%s.k%d-%d", bucket, k, chunkIndex(k, seq))
}

// chunkIndex is the index of the chunk of k items that holds sequence
// number seq.
func chunkIndex(k int, seq int32) int64 { return int64(uint32(seq)) / int64(k) }

// claimChunk picks the candidates of a prefetching take: the items of the
// cached listing, from the consumer's position, that share the first one's
// chunk (at most n). It claims the chunk with an ephemeral node, in a multi
// that checks that each candidate still exists: another prefetching
// consumer's claim skips the chunk (its items are busy until that claim
// vanishes, as claimed items of at-least-once queues are), and a candidate
// gone since the listing skips it too (taken by another: the listing is
// stale). It returns no candidates when the cached listing is used up or
// proved stale, or the claim's path with them.
func (q *queue[T]) claimChunk(ctx context.Context, n int) ([]qitem, string, error) {
	c := &q.cons
	bp := q.bucketPath(c.bucket)
	k := min(q.prefetch, maxBatchOps)
	for c.pos < len(c.cache) && !q.staleCache() {
		first := c.pos
		idx := chunkIndex(k, c.cache[first].seq)
		end := first + 1
		for end < len(c.cache) && end-first < n && chunkIndex(k, c.cache[end].seq) == idx {
			end++
		}
		cands := c.cache[first:end]
		c.pos = end
		if len(cands) == 1 {
			return cands, "", nil // a claim would cost as much as a lost race
		}
		name := chunkName(c.bucket, k, c.cache[first].seq)
		claim := joinPath(joinPath(q.dir, claimsDir), name)
		st, err := q.createChunkClaim(ctx, claim, bp, cands)
		switch {
		case err != nil:
			return nil, "", err
		case st == chunkHeld:
			return cands, claim, nil
		case st == chunkBusy:
			for _, it := range cands {
				c.busy[joinPath(bp, it.name)] = name
			}
		default: // chunkGone: count its items, as a plain take's reads would
			c.stale += len(cands)
		}
	}
	return nil, "", nil
}

// chunkState is what a chunk claim found.
type chunkState int

const (
	chunkHeld chunkState = iota // claimed by this consumer
	chunkBusy                   // claimed by another consumer
	chunkGone                   // a candidate was taken since the listing
)

// createChunkClaim creates the ephemeral chunk claim claim, in one multi
// with a check that each candidate (of bucket bp) exists. A claim found
// existing after a retried attempt is this consumer's when its session owns
// it.
func (q *queue[T]) createChunkClaim(ctx context.Context, claim, bp string, cands []qitem) (st chunkState, err error) {
	retried := false
	defer func() {
		if retried && st != chunkHeld {
			// An attempt whose reply was lost may have created the claim
			// although the take now gives the chunk up (a candidate taken
			// meanwhile, an error): left, it would keep the chunk's other
			// items busy for the session's lifetime, skipped by every
			// consumer, this one too (TestQueuePrefetchLostClaimReleased).
			q.releaseClaim(claim)
		}
	}()
	ops := make([]any, 0, len(cands)+1)
	for _, it := range cands {
		ops = append(ops, &zk.CheckVersionRequest{Path: joinPath(bp, it.name), Version: -1})
	}
	ops = append(ops, &zk.CreateRequest{Path: claim, Flags: zk.FlagEphemeral, Acl: opsOf(q.s).NodeACL(q.acl)})
	for {
		res, hidden, err := opsOf(q.s).MultiRetried(ctx, ops...)
		retried = retried || hidden
		if err == nil {
			return chunkHeld, nil
		}
		i, _ := client.FailedOp(res)
		switch {
		case i < len(cands) && errors.Is(err, zk.ErrNoNode):
			return chunkGone, nil
		case i == len(cands) && errors.Is(err, zk.ErrNoNode):
			if err := opsOf(q.s).EnsurePath(ctx, q.acl, joinPath(q.dir, claimsDir)); err != nil {
				return chunkGone, err
			}
		case i == len(cands) && errors.Is(err, zk.ErrNodeExists):
			if !retried {
				return chunkBusy, nil
			}
			_, st, err := opsOf(q.s).Get(ctx, claim)
			switch {
			case client.IsNoNode(err):
				// gone meanwhile: try again
			case err != nil:
				return chunkGone, err
			case st.EphemeralOwner == q.s.ID():
				return chunkHeld, nil // our create went through before the loss
			default:
				return chunkBusy, nil
			}
		default:
			return chunkGone, client.OpError("claim", claim, err)
		}
	}
}

// releaseClaim deletes the chunk claim claim in the background if this
// session owns it: when a take gives its chunk up, or may have created the
// claim without knowing it. It keeps trying until the claim is settled or
// the session ends (which removes it too): a claim left behind keeps its
// chunk's items from every consumer. Another consumer's claim of the same
// name (made after this one was deleted) is left alone.
func (q *queue[T]) releaseClaim(claim string) {
	q.keepReleasing(claim, func(ctx context.Context) error { return q.deleteIfOwned(ctx, claim) })
}

// keepReleasing runs release (a delete of claim) in the background until
// it succeeds or the session ends, each attempt bounded by cleanupTimeout
// and a second apart: a claim given up must not stay while the session
// lives, whatever outage its first attempts met.
func (q *queue[T]) keepReleasing(claim string, release func(context.Context) error) {
	opsOf(q.s).Spawn(func() {
		for q.s.Err() == nil {
			ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
			err := release(ctx)
			cancel()
			if err == nil || q.s.Err() != nil {
				return
			}
			opsOf(q.s).Log().Debug("could not release a queue chunk claim yet", "path", claim, "err", err)
			select {
			case <-q.s.Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
}

// deleteIfOwned deletes path if it exists and this session owns it (at the
// version read, so a node of the same name made since by another session
// stays). It syncs its server with the leader before it reads: the claim
// it releases may be a lost attempt's, sent on a connection since lost,
// and a reconnection may have landed on a follower that has not applied
// it yet. Read there as missing, it was left for the session's lifetime
// (ensemble-queue seed=409509521: the next take found it "busy", and its
// chunk's item was never delivered).
func (q *queue[T]) deleteIfOwned(ctx context.Context, path string) error {
	if err := opsOf(q.s).Sync(ctx, path); err != nil && !client.IsNoNode(err) {
		return err
	}
	_, st, err := opsOf(q.s).Get(ctx, path)
	switch {
	case client.IsNoNode(err):
		return nil
	case err != nil:
		return err
	case st.EphemeralOwner != q.s.ID():
		return nil
	}
	err = opsOf(q.s).Delete(ctx, path, st.Version)
	if client.IsNoNode(err) || errors.Is(err, zk.ErrBadVersion) {
		return nil
	}
	return err
}
