package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Priority queue protocol
//
// A priority queue of L levels is L FIFO queues, one directory per level
// under the queue's directory, each bucketed like a FIFO queue (so a level
// holds any number of items):
//
//	<dir>/p-00/b-0000000000/item-0000000000   the most urgent level
//	<dir>/p-01/...
//
// A put is a put into its level's FIFO queue (one multi, marker-protected).
// A consumer serves the most urgent level that has an item for it. When it
// finds a level empty, it keeps the watches that level's FIFO consumer
// would have waited on (the child watch of its open bucket, the bucket's
// data watch for sealing, the claims watch) and does not look at that level
// again until one of them fires or a Delivery of it is released. So before
// each take, a consumer serving level k only checks, without a request,
// whether a watch of a level above k fired: an urgent item overtakes older
// less urgent ones, and a consumer pays a notification only when an empty
// level it watches gets an item, never per item of the level it serves.
//
// Layout "levels" is recorded in <dir>'s spec record. A directory recorded
// by an earlier zkgen (all levels in one bucket, no layout) is taken over
// when its bucket is empty, and refused with ErrSpecMismatch while it holds
// items (upgradeLegacy).

// errLevelEmpty is returned by a level's take in noWait mode when the level
// has nothing for this consumer; its watches are in cons.waits.
var errLevelEmpty = errors.New("queue: level empty")

// prioQueue is the machinery shared by the priority queue handles: a FIFO
// queue per level and the consumer's view of which levels are empty.
type prioQueue[T any] struct {
	s   *Session
	dir string
	err error
	cfg queueConfig
	lvl []*queue[T]
	mu  chan struct{} // serves the handle's takes one at a time
	// armed holds, per level, the watches set when the level was last
	// found empty; nil when the level is not known to be empty.
	armed [][]<-chan zk.Event

	pool *machinePool[*prioQueue[T]] // the session's machines of this queue
}

// levelName is the directory of priority level i.
func levelName(i int) string { return fmt.Sprintf("%s%02d", levelPrefix, i) }

// levelPrefix starts the name of a priority level's directory.
const levelPrefix = "p-"

// newPrioQueue returns the machinery of a priority queue handle with cfg's
// levels, configured further by opts (WithBucketSize applies per level):
// the first machine of the session's pool for that queue (queue_pool.go),
// whose Puts and Takes borrow a machine of the pool.
func newPrioQueue[T any](s *Session, p Path, codec Codec[T], cfg queueConfig, opts []QueueOption) *prioQueue[T] {
	pq := buildPrioQueue(s, p, codec, cfg, opts)
	if pq.err != nil {
		return pq
	}
	return pooled(s, pq.dir, codec, pq.cfg, func(pool *machinePool[*prioQueue[T]]) *prioQueue[T] {
		m := buildPrioQueue(s, p, codec, cfg, opts)
		m.pool = pool
		return m
	})
}

// buildPrioQueue returns one machine of a priority queue.
func buildPrioQueue[T any](s *Session, p Path, codec Codec[T], cfg queueConfig, opts []QueueOption) *prioQueue[T] {
	for _, o := range opts {
		if o != nil {
			o.applyQueue(&cfg)
		}
	}
	pq := &prioQueue[T]{s: s, dir: p.String(), err: p.Err(), cfg: cfg, mu: make(chan struct{}, 1)}
	if pq.err == nil && (cfg.levels < 1 || cfg.levels > 100) {
		pq.err = fmt.Errorf("queue %s: priorities must be 1..100, got %d", pq.dir, cfg.levels)
	}
	if pq.err != nil {
		return pq
	}
	sub := queueConfig{handleConfig: cfg.handleConfig, ack: cfg.ack}
	for i := 0; i < cfg.levels; i++ {
		lq := buildQueue(s, Path{s: joinPath(pq.dir, levelName(i))}, codec, sub, opts)
		lq.cons.noWait, lq.top = true, pq.dir
		pq.lvl = append(pq.lvl, lq)
	}
	pq.armed = make([][]<-chan zk.Event, cfg.levels)
	if err := pq.lvl[0].err; err != nil {
		pq.err = err
	}
	return pq
}

// guard checks the spec record of the queue's directory (creating it when
// create is set), taking over an empty directory of the earlier layout.
func (pq *prioQueue[T]) guard(ctx context.Context, create bool) error {
	if pq.err != nil {
		return pq.err
	}
	want := pq.cfg.record()
	for range 3 {
		var err error
		if create {
			err = guardSpec(ctx, pq.s, pq.dir, pq.cfg.acl, want)
		} else {
			err = checkSpec(ctx, pq.s, pq.dir, want)
		}
		if !errors.Is(err, ErrSpecMismatch) {
			return err
		}
		if again, uerr := pq.upgradeLegacy(ctx); uerr != nil || !again {
			return client.JoinErrors(err, uerr)
		}
	}
	return fmt.Errorf("queue %s: %w: the directory's record keeps changing", pq.dir, ErrSpecMismatch)
}

// upgradeLegacy takes over a directory recorded by an earlier zkgen, whose
// priority queue kept every level in one bucket (b-...). When those buckets
// are empty it deletes them and records layout "levels", in one multi that
// checks the record's version, and reports true (look at the record again).
// When they hold items it refuses with ErrSpecMismatch: they must be
// drained by the earlier version first. It reports false for a record that
// is not of the earlier layout (the mismatch is another one).
func (pq *prioQueue[T]) upgradeLegacy(ctx context.Context) (bool, error) {
	data, st, err := opsOf(pq.s).Get(ctx, pq.dir)
	if err != nil {
		return false, err
	}
	var have specRecord
	if json.Unmarshal(data, &have) != nil || have.Kind != "priority_queue" || have.Layout != "" {
		return false, nil
	}
	kids, err := opsOf(pq.s).Children(ctx, pq.dir)
	if err != nil {
		return false, err
	}
	have.Layout = recordLevels
	rec, err := json.Marshal(have)
	if err != nil {
		return false, err
	}
	var ops []any
	items := 0
	for _, b := range sortBuckets(kids) {
		_, bst, err := opsOf(pq.s).Get(ctx, joinPath(pq.dir, b))
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		items += int(bst.NumChildren)
		ops = append(ops, &zk.DeleteRequest{Path: joinPath(pq.dir, b), Version: -1})
	}
	if items > 0 {
		return false, fmt.Errorf("queue %s: %w: it holds %d items in the single-directory priority queue layout of an earlier zkgen; "+
			"drain them with that version and stop its processes before a handle of this version uses the queue", pq.dir, ErrSpecMismatch, items)
	}
	ops = append(ops, &zk.SetDataRequest{Path: pq.dir, Data: rec, Version: st.Version})
	// A change found meanwhile may be our own lost attempt's: either way,
	// look again.
	_, _, err = opsOf(pq.s).MultiRetried(ctx, ops...)
	switch {
	case err == nil:
		opsOf(pq.s).Log().Info("priority queue directory taken over from the single-directory layout", "path", pq.dir)
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNotEmpty):
		// Changed meanwhile (taken over by another handle, or an item put
		// by an earlier producer): look again.
	default:
		return false, client.OpError("multi", pq.dir, err)
	}
	return true, nil
}

// telOp begins the span (and timing) of one operation on the priority
// queue as a whole; its levels record none of their own.
func (pq *prioQueue[T]) telOp(ctx context.Context, o op) span {
	return telOf(pq.s).begin(ctx, o, pq.cfg.kindName(), pq.cfg.name, pq.dir)
}

// put puts items at level prio, on a machine of the session's pool.
func (pq *prioQueue[T]) put(ctx context.Context, prio int, items []T) (int, error) {
	if pq.pool == nil { // a handle that failed to be made: putOn reports why
		return pq.putOn(ctx, prio, items)
	}
	m := pq.pool.borrow(putSide)
	defer pq.pool.give(putSide, m)
	return m.putOn(ctx, prio, items)
}

// putOn puts items at level prio.
func (pq *prioQueue[T]) putOn(ctx context.Context, prio int, items []T) (n int, err error) {
	defer pq.telOp(ctx, opQueuePut).end(&err)
	if pq.err != nil {
		return 0, pq.err
	}
	if prio < 0 || prio >= len(pq.lvl) {
		return 0, fmt.Errorf("queue %s: %w: %d (have %d)", pq.dir, ErrPriorityRange, prio, len(pq.lvl))
	}
	if err := pq.guard(ctx, true); err != nil {
		return 0, err
	}
	return pq.lvl[prio].put(ctx, 0, items)
}

// take returns between 1 and n items, on a machine of the session's pool.
func (pq *prioQueue[T]) take(ctx context.Context, n int) ([]*Delivery[T], error) {
	if pq.pool == nil {
		return pq.takeOn(ctx, n)
	}
	m := pq.pool.borrow(takeSide)
	defer pq.pool.give(takeSide, m)
	return m.takeOn(ctx, n)
}

// takeOn returns between 1 and n items of the most urgent level that has
// one for this consumer, blocking until there is one.
func (pq *prioQueue[T]) takeOn(ctx context.Context, n int) (ds []*Delivery[T], err error) {
	defer pq.telOp(ctx, opQueueTake).end(&err)
	if n < 1 {
		return nil, fmt.Errorf("queue %s: take of %d items", pq.dir, n)
	}
	if err := pq.guard(ctx, false); err != nil {
		return nil, err
	}
	if err := pq.lock(ctx); err != nil {
		return nil, err
	}
	defer func() { <-pq.mu }()
	for {
		var out []*Delivery[T]
		for i, lq := range pq.lvl {
			// Take from level i until it is empty for this consumer or
			// n items are taken, then go on to the next level.
			for len(out) < n && !pq.quiet(i) {
				pq.armed[i] = nil
				got, err := lq.take(ctx, n-len(out))
				if errors.Is(err, errLevelEmpty) {
					pq.armed[i] = lq.cons.waits
					break
				}
				out = append(out, got...)
				if err != nil {
					return out, err
				}
			}
			if len(out) == n {
				return out, nil
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		if err := pq.wait(ctx); err != nil {
			return nil, err
		}
	}
}

// quiet reports whether level i is known to be empty for this consumer:
// none of its watches fired and none of its deliveries was released since
// it was found empty.
func (pq *prioQueue[T]) quiet(i int) bool {
	ws := pq.armed[i]
	if len(ws) == 0 || pq.lvl[i].cons.released.Load() {
		return false
	}
	for _, w := range ws {
		select {
		case <-w:
			pq.fired(i, w)
			return false
		default:
		}
	}
	return true
}

// fired notes that watch w of level i fired (its channel yields nothing
// twice): if it is the level's data watch, the level sets it again when it
// waits next.
func (pq *prioQueue[T]) fired(i int, w <-chan zk.Event) {
	c := &pq.lvl[i].cons
	switch w {
	case c.dw:
		c.dw, c.dwBucket = nil, ""
	case c.spread.stuck:
		c.spread.stuck = nil
		pq.lvl[i].unspread() // others' chunks held the level back for chunkWait
	}
}

// wait blocks until a watch of a level fires, or ctx or the session ends.
func (pq *prioQueue[T]) wait(ctx context.Context) error {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(pq.s.Done())},
	}
	level := []int{-1, -1}
	var chans []<-chan zk.Event
	for i, ws := range pq.armed {
		for _, w := range ws {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
			level, chans = append(level, i), append(chans, w)
		}
	}
	i, _, _ := reflect.Select(cases)
	// Every watch ready at this instant is taken, in level order, not the
	// one Select picked at random (see queue.waitOpen). A watch that fired
	// (its channel yields nothing twice) has its level looked at again,
	// which sets fresh watches.
	for j, w := range chans {
		if j+2 == i || ready(w) {
			pq.fired(level[j+2], w)
			pq.armed[level[j+2]] = nil
		}
	}
	return ended(ctx, pq.s)
}

// lock takes the handle's consumer mutex (acquire).
func (pq *prioQueue[T]) lock(ctx context.Context) error { return acquire(ctx, pq.s, pq.mu) }

// length sums the items of every level.
func (pq *prioQueue[T]) length(ctx context.Context) (int, error) {
	if pq.err != nil {
		return 0, pq.err
	}
	n := 0
	for _, lq := range pq.lvl {
		k, err := lq.length(ctx)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// stats sums the levels' stats; Oldest is the oldest item of any level.
func (pq *prioQueue[T]) stats(ctx context.Context) (_ QueueStats, err error) {
	defer pq.telOp(ctx, opStats).end(&err)
	st := QueueStats{ByPriority: make([]int, len(pq.lvl))}
	if pq.err != nil {
		return st, pq.err
	}
	for i, lq := range pq.lvl {
		ls, err := lq.stats(ctx)
		if err != nil {
			return st, err
		}
		st.Len += ls.Len
		st.ByPriority[i] = ls.Len
		st.Claimed += ls.Claimed
		if !ls.Oldest.IsZero() && (st.Oldest.IsZero() || ls.Oldest.Before(st.Oldest)) {
			st.Oldest = ls.Oldest
		}
	}
	return st, nil
}

// peek returns the item a lone consumer's next Take would get: the head
// of the most urgent level that has one (see queue.peek).
func (pq *prioQueue[T]) peek(ctx context.Context) (v T, ok bool, err error) {
	defer pq.telOp(ctx, opPeek).end(&err)
	if err := pq.guard(ctx, false); err != nil {
		return v, false, err
	}
	for _, lq := range pq.lvl {
		if v, ok, err = lq.peek(ctx); ok || err != nil {
			return v, ok, err
		}
	}
	return v, false, nil
}

// deadLetters lists every level's dead letters, oldest move first; each
// is requeued into its own level.
func (pq *prioQueue[T]) deadLetters(ctx context.Context) (_ []*DeadLetter[T], err error) {
	defer pq.telOp(ctx, opDeadLetters).end(&err)
	if pq.err != nil {
		return nil, pq.err
	}
	var out []*DeadLetter[T]
	for _, lq := range pq.lvl {
		ds, err := lq.deadLetters(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
	}
	slices.SortStableFunc(out, func(a, b *DeadLetter[T]) int { return a.Moved.Compare(b.Moved) })
	return out, nil
}
