package runtime

import (
	"cmp"
	"strconv"
	"strings"
	"time"
)

// A QueueCache mirrors the depth and the next item of every instance of a
// queue resource (FIFO, priority or delay, at most or at least once): a
// Cache over the item nodes in the buckets below each queue directory
// (queue_layout.go), of which it reads the stat alone (in one-shot mode,
// whose watches need a read of the data, the data too, discarded), never
// an item's payload. It holds one entry per item (path and stat), so
// WithMaxNodes bounds the items of the queues it mirrors.
//
// Its methods are LockCache's (see there), with the instance's
// QueueState as the value: an instance is there while it has an item;
// Events has one event per change of its depth or of its next item.
type QueueCache[K comparable] struct {
	*childCache[K, struct{}, QueueState]
}

// QueueState is one queue instance as a QueueCache mirrors it. Like Len,
// it counts the items in the buckets: claimed ones included (at least
// once), not the ones a prefetching consumer has taken into its buffer
// (they are deleted), not dead letters.
type QueueState struct {
	Len int // items
	// ByPriority are the items per priority index (0 first), for a
	// priority queue; nil otherwise.
	ByPriority []int
	// Next is the item a lone consumer would be handed next: the most
	// urgent, due first (a delay queue's, due or not), oldest item;
	// claimed or not.
	Next QueueItem
	// Oldest is the creation time (server clock) of the item created
	// first, whatever its priority or due time.
	Oldest time.Time
}

// QueueItem is an item of a QueueState: its node, not its payload.
type QueueItem struct {
	Node     string    // full znode path
	Priority int       // its priority index (priority queues)
	Due      time.Time // when it is due (delay queues); zero otherwise
	Created  time.Time // its creation time (server clock)
}

type discardCodec struct{}

func (discardCodec) Encode(struct{}) ([]byte, error) { return nil, nil }
func (discardCodec) Decode([]byte) (struct{}, error) { return struct{}{}, nil }

// NewQueueCache returns a cache of the FIFO or delay queue instances of
// tmpl (the queue directories, as NewQueue's and NewDelayQueue's paths),
// keyed by key(parameters). opts are the Cache's (WithMaxNodes bounds the
// items held). It holds nothing until Run; it fails only when tmpl is
// invalid.
func NewQueueCache[K comparable](tmpl Template, key func(Params) K, opts ...CacheOption) (*QueueCache[K], error) {
	return newQueueCache(tmpl.strPrefixed("bucket", bucketPrefix).strPrefixed("item", itemPrefix), tmpl.Len(), key, 0, opts)
}

// NewPriorityQueueCache is NewQueueCache for priority queue instances of
// levels priorities (as NewPriorityQueue's paths and levels).
func NewPriorityQueueCache[K comparable](tmpl Template, key func(Params) K, levels int, opts ...CacheOption) (*QueueCache[K], error) {
	nodes := tmpl.strPrefixed("level", levelPrefix).strPrefixed("bucket", bucketPrefix).strPrefixed("item", itemPrefix)
	return newQueueCache(nodes, tmpl.Len(), key, max(levels, 1), opts)
}

func newQueueCache[K comparable](nodes Template, inst int, key func(Params) K, levels int, opts []CacheOption) (*QueueCache[K], error) {
	opts = append(opts[:len(opts):len(opts)], func(c *cacheConfig) { c.statOnly = true })
	derive := func(es []*CacheEntry[childKey[K], struct{}]) (QueueState, []string) { return deriveQueue(es, levels) }
	c, err := newSubtreeCache(nodes, inst, key, Codec[struct{}](discardCodec{}), derive, opts)
	if err != nil {
		return nil, err
	}
	return &QueueCache[K]{c}, nil
}

// queuePlace is where an item stands in serving order.
type queuePlace struct {
	level  int
	bucket int64
	item   qitem
}

// placeOf parses an item's path below its queue directory: <level>/ (a
// priority queue's) <bucket>/<item>; false for foreign nodes.
func placeOf(name string, levels int) (queuePlace, bool) {
	var pl queuePlace
	segs := strings.Split(name, "/")
	if levels > 0 {
		n, err := strconv.Atoi(strings.TrimPrefix(segs[0], levelPrefix))
		if err != nil || len(segs[0]) != len(levelPrefix)+2 || n < 0 || n >= levels {
			return pl, false
		}
		pl.level, segs = n, segs[1:]
	}
	b, okB := parseBucket(segs[0])
	it, okI := parseItem(segs[1])
	pl.bucket, pl.item = b, it
	return pl, okB && okI
}

func (a queuePlace) compare(b queuePlace) int {
	return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.item.due, b.item.due),
		seqCompare(a.item.seq, b.item.seq), strings.Compare(a.item.name, b.item.name))
}

// deriveQueue counts the items of one queue instance and finds its next
// and its oldest. What the state shows is its depth, per priority, and
// its next item's path: a change of any of them is an event.
func deriveQueue[K comparable](es []*CacheEntry[childKey[K], struct{}], levels int) (QueueState, []string) {
	var st QueueState
	if levels > 0 {
		st.ByPriority = make([]int, levels)
	}
	var next queuePlace
	var nextE *CacheEntry[childKey[K], struct{}]
	oldest := int64(-1)
	for _, e := range es {
		pl, ok := placeOf(e.Key.name, levels)
		if !ok {
			continue
		}
		st.Len++
		if levels > 0 {
			st.ByPriority[pl.level]++
		}
		if nextE == nil || pl.compare(next) < 0 {
			next, nextE = pl, e
		}
		if oldest < 0 || e.Stat.Czxid < oldest {
			oldest, st.Oldest = e.Stat.Czxid, time.UnixMilli(e.Stat.Ctime).UTC()
		}
	}
	if nextE == nil {
		return st, nil
	}
	st.Next = QueueItem{Node: nextE.Path, Priority: next.level, Created: time.UnixMilli(nextE.Stat.Ctime).UTC()}
	if next.item.due > 0 {
		st.Next.Due = time.UnixMilli(next.item.due).UTC()
	}
	shown := []string{nextE.Path, strconv.Itoa(st.Len)}
	for _, n := range st.ByPriority {
		shown = append(shown, strconv.Itoa(n))
	}
	return st, shown
}
