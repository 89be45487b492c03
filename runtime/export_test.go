package runtime

import (
	"context"
	"fmt"
	"strings"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// The session's hooks (see client/testhooks.go).
var (
	PipeStats        = client.PipeStats
	ListBeforeCreate = client.ListBeforeCreate
	AnsweredAgo      = client.AnsweredAgo
)

// OnCacheListed makes fn run after each listing a cache reads, before the
// cache marks what it found (cache_run.go); nil removes it.
func OnCacheListed(fn func(path string)) {
	if fn == nil {
		cacheListed.Store(nil)
		return
	}
	cacheListed.Store(&fn)
}

// HandOffs returns how many lock waiters of s took the lock over without
// a listing (lock.go, the hand-off).
func HandOffs(s *Session) int64 { return handOffsOf(s).Load() }

// OnOwnerCreated makes fn run after each partitioner owner node's create
// applied, before the member reads it back; nil removes it.
func OnOwnerCreated(fn func(partition int)) {
	if fn == nil {
		ownerCreated.Store(nil)
		return
	}
	ownerCreated.Store(&fn)
}

// OnOwnedSent makes fn run after a set was sent on an Owned stream,
// before the stream records it as delivered; nil removes it.
func OnOwnedSent(fn func(set []int)) {
	if fn == nil {
		ownedSent.Store(nil)
		return
	}
	ownedSent.Store(&fn)
}

// InlineItem decodes an item node name that carries its item (a small
// item rides in its name), for tests that diagnose nodes left behind.
func InlineItem[T any](name string, codec Codec[T]) (v T, ok bool) {
	it, ok := parseItem(name)
	if !ok || !it.hasIn {
		return v, false
	}
	v, err := codec.Decode(it.inline)
	return v, err == nil
}

// Contend makes q's next Take spread out as if it had lost a race to
// another consumer (queue_spread.go), so that a test with one consumer can
// watch a chunk claim.
func Contend[T any](q *Queue[T]) { contend(q.q) }

// ContendAck is Contend for an at-least-once queue.
func ContendAck[T any](q *AckQueue[T]) { contend(q.q) }

func contend[T any](q *queue[T]) {
	p := q.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.idle[takeSide] {
		m.cons.spread.on = true
	}
}

// SpreadChunk is how many consecutive sequence numbers a spread consumer's
// chunk covers.
const SpreadChunk = spreadChunk

// ConsumerState describes the idle take machines of an at-least-once
// queue handle's pool, for a test's failure report.
func ConsumerState[T any](q *AckQueue[T]) string {
	p := q.q.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, m := range p.idle[takeSide] {
		c := &m.cons
		fmt.Fprintf(&b, "[bucket %q cache %d pos %d busy %v pendingDrop %v walked %q spread{on %v own %q busy %v skipped %d}] ",
			c.bucket, len(c.cache), c.pos, c.busy, c.pendingDrop, c.walked, c.spread.on, c.spread.own, c.spread.busy, c.spread.skipped)
	}
	return b.String()
}

// ContendPriority is Contend for a priority queue: every level of its
// idle take machines spreads out.
func ContendPriority[T any](q *PriorityQueue[T]) {
	p := q.q.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.idle[takeSide] {
		for _, lq := range m.lvl {
			lq.cons.spread.on = true
		}
	}
}

// HeldResources returns how many resources the session's holders registry
// has entries for (holders.go).
func HeldResources(s *Session) int {
	r := holdersOf(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// ChunkWait is how long a spread consumer waits for others' chunk claims
// to go before it takes their items (queue_spread.go).
const ChunkWait = chunkWait

// OpsOf returns s's operations, for tests that reach below the recipes.
func OpsOf(s *Session) *client.Ops { return opsOf(s) }

// Await sends fn's request as the recipes send theirs: on a stepped
// simulated server, after the calling goroutine's turn (client.Await).
// Tests that play an operator's raw requests use it so that a replay
// orders them as it orders the recipes'.
func Await[T any](ctx context.Context, s *Session, fn func() (T, error)) (T, error) {
	return client.Await(ctx, s, fn)
}

// ServiceList returns the list of name's enabled instances that d's
// providers read (shared, not a copy).
func ServiceList[T any](d *Services[T], name string) []ServiceInstance[T] {
	l, _ := d.enabled(name)
	return l
}
