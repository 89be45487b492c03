package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Spread consumers (FIFO queues and priority levels, without prefetch)
//
// Consumers that all go for the lowest item race for it: each reads (or
// claims) it, one takes it, and the others have spent requests for
// nothing. With four consumers that doubled the requests an item. So a
// consumer that lost such a race spreads out from then on: it claims the
// chunk of the lowest item it found listed and not claimed by another (the
// items whose sequence numbers divided by spreadChunk are equal, named as a
// prefetching consumer's chunk) with an ephemeral node, made in a multi
// that checks the items it saw still exist (it lists the claims first, so
// it does not try chunks others hold), and takes that chunk's items in
// order, each with its own requests as before: at most once a read and a
// marker-protected multi that deletes it; at least once a claim of the
// item. Nothing is taken ahead of a Take, so a process that dies loses
// nothing, and its chunk claim vanishes with its session. A chunk of one
// listed item is taken without a claim. A lone consumer never loses a race
// and never claims.
//
// The claim is deleted with the chunk's last item (the multi that deletes
// it; at least once, once it is claimed), or when the consumer finds none of
// its chunk left in a fresh listing, or claimLinger after its last Take, or
// markerLinger into a Take that waits for items. Other consumers skip a
// claimed chunk (its items are busy, like items claimed at least once) and
// wait for the claim to vanish when nothing else is left, for chunkWait at
// most, counted from when they began to wait, not from their last wake-up
// (see heldUntil): a claimer that is alive but slow wakes them at each
// item it takes. After that the chunk is overstayed: they take its items
// without a claim, away from its front where its claimer works (see
// overstayedCands), until its claim goes.
//
// Order: a consumer takes items in the order they were put, also with
// others taking: it takes a chunk's items only while it holds the chunk's
// claim, and keeps the claim until the chunk's last item or until no more
// of the chunk can come (the next items exist when a chunk has none left to
// list). Only items of a chunk whose claimer gave up (it stopped taking,
// its session ended, or it held them chunkWait while others waited) can
// reach a consumer after later ones.

// spreadChunk is how many consecutive sequence numbers a spread
// consumer's chunk covers: at most that many items (a bucket's sequence
// numbers also count its deletes, so a chunk of a queue taken while it is
// filled holds fewer). Its claims are named like a WithPrefetch(64)
// consumer's.
const spreadChunk = 64

// claimLinger is how long a spread consumer keeps its chunk claim after a
// Take for its next Take to use.
const claimLinger = time.Second

// chunkWait is how long a spread consumer with nothing left but others'
// chunks waits for one of their claims to go before it takes their items
// itself (heldUntil): a live claimer that stops taking gives its claim up
// within claimLinger, so a claim kept longer while others wait belongs to
// a claimer frozen, dead or cut off whose session has not ended yet, or to
// one too slow to keep a chunk to itself.
const chunkWait = 2 * claimLinger

// spreads reports whether the queue's consumers spread out over chunks.
func (q *queue[T]) spreads() bool { return !q.delay && !q.prefetching() }

// contended notes that this consumer lost a race to another: from now on it
// spreads out, if the queue's consumers do.
func (q *queue[T]) contended() {
	if q.spreads() {
		q.cons.spread.on = true
	}
}

// spread is a spread consumer's state, part of its consumer.
type spread struct {
	on       bool            // it lost a race: it claims chunks
	own      string          // path of this consumer's chunk claim; "" when none
	ownIdx   int64           // the claimed chunk's index
	ownB     string          // the claimed chunk's bucket
	relisted bool            // the cache was listed again since the last item of the own chunk
	busy     map[string]bool // names of the chunk claims of others seen (bucket busyB)
	busyB    string
	skipped  int              // items of others' chunks the last listing left out: a change of the claims matters
	listed   bool             // busy and top are from a listing of the claims made since the last claim
	top      int64            // highest chunk index claimed by others in that listing; -1: none
	stuck    <-chan zk.Event  // a priority level's stuckLevel channel, until it fires
	held     time.Time        // when it began to wait with nothing but others' chunks; zero: not waiting so
	over     map[string]int64 // others' chunk claims it waited chunkWait for (overstayed), until they go: name -> creation zxid (0: not read yet)
	linger   *time.Timer      // releases own after claimLinger
	lingers  bool             // linger is armed
	lingerAt time.Time        // when the armed linger is due
}

// spreadCands picks the candidates of a spread consumer's take (up to n)
// from the cached listing and removes them from it: items of its own
// chunk, else of the lowest chunk not claimed by another (claiming it).
// drop, when not empty, is the own claim, to delete with the candidates
// (they end the chunk). It returns no candidates when the cache must be
// listed again (it then marks it used up).
func (q *queue[T]) spreadCands(ctx context.Context, n int) (cands []qitem, drop string, err error) {
	c := &q.cons
	sp := &c.spread
	q.spreadBucket()
	for c.pos < len(c.cache) && !q.staleCache() {
		if sp.own != "" {
			if cands, drop, again := q.ownCands(n); cands != nil || again {
				return cands, drop, nil
			}
			q.releaseOwn() // none of the chunk left in a fresh listing
		}
		if !sp.listed {
			// Choosing a chunk: learn which are claimed now (one listing
			// instead of a failed claim per chunk held by another).
			if err := q.listClaims(ctx); err != nil {
				return nil, "", err
			}
		}
		i := q.firstFree()
		if i < 0 {
			// Only items of others' chunks: list again, leaving them out,
			// and wait for a change when nothing else is left.
			c.pos = len(c.cache)
			return nil, "", nil
		}
		if cands, err := q.claimFrom(ctx, i); cands != nil || err != nil {
			return cands, "", err
		}
	}
	return nil, "", nil
}

// spreadBucket resets what the consumer knows of others' chunks when it
// moved to another bucket.
func (q *queue[T]) spreadBucket() {
	c := &q.cons
	if sp := &c.spread; sp.busyB != c.bucket {
		sp.busy, sp.busyB, sp.listed = map[string]bool{}, c.bucket, false
	}
}

// claimFrom claims the chunk of the cache's item i (the first free one).
// It returns that item alone when it is the chunk's only listed one (no
// claim), nothing otherwise: the chunk is then this consumer's, or known
// claimed by another.
func (q *queue[T]) claimFrom(ctx context.Context, i int) ([]qitem, error) {
	c := &q.cons
	sp := &c.spread
	idx := chunkIndex(spreadChunk, c.cache[i].seq)
	end := i + 1
	for end < len(c.cache) && chunkIndex(spreadChunk, c.cache[end].seq) == idx {
		end++
	}
	if end-i == 1 {
		return q.cut(i, i+1), nil // a claim would cost as much as a lost race
	}
	name := chunkName(c.bucket, spreadChunk, c.cache[i].seq)
	if _, over := sp.over[name]; over {
		return q.overstayedCands(i, end), nil
	}
	claim := joinPath(joinPath(q.dir, claimsDir), name)
	st, err := q.createChunkClaim(ctx, claim, q.bucketPath(c.bucket), c.cache[i:end])
	switch {
	case err != nil:
		return nil, err
	case st == chunkHeld:
		sp.own, sp.ownIdx, sp.ownB, sp.relisted, sp.listed = claim, idx, c.bucket, false, false
	default:
		// Claimed by another, or an item was taken since the listing
		// (most likely by a consumer working on the chunk: the multi
		// checks the items before it creates the claim): skip it.
		sp.busy[name] = true
	}
	return nil, nil
}

// overstayedCands takes one item of an overstayed chunk (the cache's items
// [i, end), a chunk another consumer claimed and kept while this one
// waited chunkWait) without claiming it: a random one but the first, which
// its claimer, if alive, takes next, so that it and the other consumers
// that waited race little. Items of such a chunk reach consumers out of
// order.
func (q *queue[T]) overstayedCands(i, end int) []qitem {
	k := i + 1 + opsOf(q.s).Rand().IntN(end-i-1)
	return q.cut(k, k+1)
}

// stuckChunks returns a channel that fires at heldUntil when the consumer,
// spread out, waits with nothing left but items of others' chunks; nil
// otherwise. stop releases its timer.
func (q *queue[T]) stuckChunks() (<-chan time.Time, func()) {
	until, held := q.heldUntil()
	if !held {
		return nil, func() {}
	}
	t := time.NewTimer(time.Until(until))
	return t.C, func() { t.Stop() }
}

// heldUntil reports whether the consumer, spread out, has nothing left but
// items of others' chunks, and until when it waits for one of their claims
// to go: chunkWait after it first found itself so. The bound runs across
// the wake-ups a live claimer's takes cause and across Takes; it starts
// again only once the consumer took an item (tookItems) or was not held.
func (q *queue[T]) heldUntil() (time.Time, bool) {
	sp := &q.cons.spread
	if !q.heldByChunks() {
		sp.held = time.Time{}
		return time.Time{}, false
	}
	if sp.held.IsZero() {
		sp.held = time.Now()
	}
	return sp.held.Add(chunkWait), true
}

// tookItems notes that a Take returned items: the consumer is not idle, so
// a later wait on others' chunks is bounded afresh (a priority level's
// stuckLevel channel too: one armed before is dropped, unfired).
func (q *queue[T]) tookItems() {
	sp := &q.cons.spread
	sp.held, sp.stuck = time.Time{}, nil
}

// stuckLevel is stuckChunks for a priority queue's level, which does not
// wait itself but hands its watches to the priority queue: a channel that
// is closed at heldUntil (the priority queue then calls unspread, see
// prioQueue.fired), or nil.
func (q *queue[T]) stuckLevel() <-chan zk.Event {
	sp := &q.cons.spread
	until, held := q.heldUntil()
	if !held {
		return nil
	}
	if sp.stuck == nil {
		ch := make(chan zk.Event)
		time.AfterFunc(time.Until(until), func() { close(ch) })
		sp.stuck = ch
	}
	return sp.stuck
}

// heldByChunks reports whether the consumer, spread out, skips items of
// others' chunks: in the bucket it listed last (skipped), or in sealed
// buckets it passed (noted busy under a chunk claim).
func (q *queue[T]) heldByChunks() bool {
	c := &q.cons
	if !c.spread.on {
		return false
	}
	if c.spread.skipped > 0 {
		return true
	}
	for _, claim := range c.busy {
		if isChunkClaim(claim) {
			return true
		}
	}
	return false
}

// isChunkClaim reports whether a claim's name (<bucket>.<rest>) is a
// chunk's (<bucket>.k<n>-<index>) rather than an item's.
func isChunkClaim(name string) bool {
	_, rest, ok := strings.Cut(name, ".")
	return ok && len(rest) > 1 && rest[0] == 'k' && rest[1] >= '0' && rest[1] <= '9'
}

// unspread makes the consumer go for the lowest item again, as one that
// lost no race, claims or not, after others' chunks held it back for
// chunkWait: their items are taken in their turn, racing their claimer if
// it is alive after all. Those chunks are overstayed from then on: when a
// race lost spreads the consumer out again, it takes their items without
// a claim (overstayedCands) instead of waiting for them again. The items
// of others' chunks it noted busy in sealed buckets it passed are
// forgotten, and the walk starts again from the lowest bucket.
func (q *queue[T]) unspread() {
	c := &q.cons
	sp := &c.spread
	q.releaseOwn()
	sp.on, sp.skipped, sp.held = false, 0, time.Time{}
	if sp.over == nil {
		sp.over = map[string]int64{}
	}
	for name := range sp.busy {
		sp.over[name] = 0
	}
	clear(sp.busy)
	sp.listed = false
	c.cache, c.pos, c.watch = nil, 0, nil
	passed := false
	for p, claim := range c.busy {
		if isChunkClaim(claim) {
			sp.over[claim] = 0
			delete(c.busy, p)
			passed = true
		}
	}
	if passed {
		c.bucket = ""
		c.dw, c.dwBucket = nil, ""
	}
}

// chunkEnds reports whether seq is the last of its chunk.
func chunkEnds(seq int32) bool { return (int64(uint32(seq))+1)%spreadChunk == 0 }

// ownCands takes up to n items of the consumer's own chunk out of the
// cache; drop is the claim when they end the chunk. With none cached, it
// asks for a fresh listing once (again), for items of the chunk put since;
// none there either, and the claim is done.
func (q *queue[T]) ownCands(n int) (cands []qitem, drop string, again bool) {
	c := &q.cons
	sp := &c.spread
	if sp.ownB != c.bucket {
		return nil, "", false
	}
	i := c.pos
	for i < len(c.cache) && chunkIndex(spreadChunk, c.cache[i].seq) != sp.ownIdx {
		i++
	}
	end := i
	for end < len(c.cache) && end-i < n && chunkIndex(spreadChunk, c.cache[end].seq) == sp.ownIdx {
		end++
	}
	if end == i {
		if sp.relisted {
			return nil, "", false
		}
		sp.relisted = true
		c.pos = len(c.cache)
		return nil, "", true
	}
	sp.relisted = false
	if last := end == len(c.cache) || chunkIndex(spreadChunk, c.cache[end].seq) != sp.ownIdx; last && (chunkEnds(c.cache[end-1].seq) || end < len(c.cache)) {
		// The take ends the chunk (a later item exists, and sequence
		// numbers only grow, so no more can come into it): its multi
		// deletes the claim.
		drop, sp.own = sp.own, ""
	}
	return q.cut(i, end), drop, false
}

// firstFree returns the index in the cache (from pos) of the first item
// whose chunk is not claimed by another consumer, or -1. It prefers chunks
// above the highest claimed one: consumers claim from the lowest free
// chunk, so an unclaimed chunk below a claimed one was most likely taken
// already (the cache predates that), and claiming it would fail.
func (q *queue[T]) firstFree() int {
	c := &q.cons
	sp := &c.spread
	below := -1
	for i := c.pos; i < len(c.cache); i++ {
		switch {
		case sp.busy[chunkName(c.bucket, spreadChunk, c.cache[i].seq)]:
		case chunkIndex(spreadChunk, c.cache[i].seq) > sp.top:
			return i
		case below < 0:
			below = i
		}
	}
	return below
}

// chunkBusy reports whether item it of the current bucket is in a chunk
// claimed by another consumer (as far as this one knows).
func (q *queue[T]) chunkBusy(it qitem) bool {
	sp := &q.cons.spread
	return sp.on && sp.busyB == q.cons.bucket && sp.busy[chunkName(sp.busyB, spreadChunk, it.seq)]
}

// listClaims lists the queue's claims and notes the chunks of the current
// bucket claimed by others, and the highest of them (top).
func (q *queue[T]) listClaims(ctx context.Context) error {
	c := &q.cons
	sp := &c.spread
	kids, err := opsOf(q.s).Children(ctx, joinPath(q.dir, claimsDir))
	if err != nil && !client.IsNoNode(err) {
		return err
	}
	sp.listed, sp.top = true, -1
	clear(sp.busy)
	q.forgetGone(kids)
	if err := q.checkOver(ctx); err != nil {
		return err
	}
	prefix := fmt.Sprintf("%s.k%d-", c.bucket, spreadChunk)
	for _, k := range kids {
		rest, ok := strings.CutPrefix(k, prefix)
		_, over := sp.over[k]
		if !ok || over || joinPath(joinPath(q.dir, claimsDir), k) == sp.own {
			continue
		}
		if idx, err := strconv.ParseInt(rest, 10, 64); err == nil {
			sp.busy[k] = true
			sp.top = max(sp.top, idx)
		}
	}
	return nil
}

// checkOver reads the overstayed claims' creation zxids: a claim of the
// same name made since the one this consumer waited for (the chunk given
// up and claimed again, or a later batch's chunk of that index) is not
// overstayed, and is waited for afresh. One read per overstayed claim, when
// the consumer chooses a chunk while some are.
func (q *queue[T]) checkOver(ctx context.Context) error {
	sp := &q.cons.spread
	for _, name := range slices.Sorted(maps.Keys(sp.over)) { // one order of reads on a replay
		czxid := sp.over[name]
		_, st, err := opsOf(q.s).Get(ctx, joinPath(joinPath(q.dir, claimsDir), name))
		switch {
		case client.IsNoNode(err):
			delete(sp.over, name)
		case err != nil:
			return err
		case czxid == 0:
			sp.over[name] = st.Czxid
		case st.Czxid != czxid:
			delete(sp.over, name)
		}
	}
	return nil
}

// forgetGone forgets the overstayed chunk claims not among claims (the
// claims directory's children): a claim of the same name made later is
// another consumer's, to be waited for afresh.
func (q *queue[T]) forgetGone(claims []string) {
	sp := &q.cons.spread
	if len(sp.over) == 0 {
		return
	}
	live := make(map[string]bool, len(claims))
	for _, c := range claims {
		live[c] = true
	}
	for name := range sp.over {
		if !live[name] {
			delete(sp.over, name)
		}
	}
}

// dropReleasedChunks forgets the chunk claims of others not among claims
// (the claims directory's children) and reports whether there were any.
func (q *queue[T]) dropReleasedChunks(claims []string) bool {
	q.forgetGone(claims)
	sp := &q.cons.spread
	if len(sp.busy) == 0 {
		return false
	}
	live := make(map[string]bool, len(claims))
	for _, c := range claims {
		live[c] = true
	}
	dropped := false
	for name := range sp.busy {
		if !live[name] {
			delete(sp.busy, name)
			dropped = true
		}
	}
	if dropped {
		sp.listed = false
	}
	return dropped
}

// cut removes the cache's items [i, end) and returns them.
func (q *queue[T]) cut(i, end int) []qitem {
	c := &q.cons
	out := append([]qitem(nil), c.cache[i:end]...)
	c.cache = append(c.cache[:i], c.cache[end:]...)
	return out
}

// releaseOwn gives the consumer's chunk claim up (deleted in the
// background).
func (q *queue[T]) releaseOwn() {
	sp := &q.cons.spread
	if sp.own != "" {
		q.dropOwn(sp.own)
		sp.own = ""
	}
}

// dropOwn deletes claim, a chunk claim this consumer holds, in the
// background: a plain delete, which after a connection loss deletes only
// while this session still owns the claim (DeleteOwned: another consumer
// may have claimed the chunk again since). It keeps trying, as
// releaseClaim does, until the claim is gone or the session ends: a
// release that gave up with the retry policy (an outage longer than its
// ten attempts) left the claim for the session's lifetime, keeping the
// chunk's items from the others for chunkWait and the claim in ZooKeeper
// (TestQueueChunkReleaseOutlivesAnOutage).
func (q *queue[T]) dropOwn(claim string) {
	q.keepReleasing(claim, func(ctx context.Context) error {
		if err := opsOf(q.s).DeleteOwned(ctx, claim); !client.IsNoNode(err) {
			return err
		}
		return nil
	})
}

// lingerOwn arms the release of the consumer's chunk claim claimLinger from
// now, when a Take ends with one; a Take stops it first (stopLinger).
// Called with the consumer's mutex held. The timer's release happens only
// once the armed time has come: a Take that ends, and arms it again, at
// the instant an earlier arming falls due would otherwise release the
// claim or keep it as Go ran the two (ackqueue-dead seed=316678853, two
// histories).
func (q *queue[T]) lingerOwn() {
	sp := &q.cons.spread
	if sp.own == "" {
		return
	}
	sd := &q.cons.side
	if sp.linger == nil {
		sp.linger = time.AfterFunc(claimLinger, func() {
			select {
			case sd.mu <- struct{}{}: // a Take in progress keeps the claim
			default:
				return
			}
			if sp.lingers && !time.Now().Before(sp.lingerAt) {
				sp.lingers = false
				q.releaseOwn()
			}
			<-sd.mu
		})
	} else {
		sp.linger.Reset(claimLinger)
	}
	sp.lingers, sp.lingerAt = true, time.Now().Add(claimLinger)
}

// stopLinger keeps the claim for the Take that begins.
func (q *queue[T]) stopLinger() { q.cons.spread.lingers = false }
