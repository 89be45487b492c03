package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Read-only views of recipe state, for operators' tools (zkgen inspect).
// None of them blocks beyond its reads, sets a watch, or writes anything.

// QueueStats is a snapshot of a queue.
type QueueStats struct {
	Len        int       // items, claimed ones included
	ByPriority []int     // priority queues: items per priority index (0 first); nil for FIFO queues
	Oldest     time.Time // creation time (server clock) of the oldest item; zero when empty
	Claimed    int       // at-least-once queues: items claimed by a consumer and not yet acked
}

// stats lists the queue's items (each bucket once) and reads the oldest
// item's creation time.
func (q *queue[T]) stats(ctx context.Context) (QueueStats, error) {
	var st QueueStats
	if q.err != nil {
		return st, q.err
	}
	if q.priority {
		st.ByPriority = make([]int, q.levels)
	}
	bs, err := q.buckets(ctx)
	if err != nil {
		return st, err
	}
	var oldest []string // candidate item paths, oldest first
	for _, b := range bs {
		kids, err := q.s.children(ctx, q.bucketPath(b))
		if isNoNode(err) {
			continue
		}
		if err != nil {
			return st, err
		}
		items := sortItems(kids)
		st.Len += len(items)
		if q.priority {
			for _, it := range items {
				if it.prio < len(st.ByPriority) {
					st.ByPriority[it.prio]++
				}
			}
			// The oldest item is the one with the lowest sequence
			// number, whatever its priority.
			slicesSortBySeq(items)
		}
		if oldest == nil {
			for _, it := range items {
				oldest = append(oldest, joinPath(q.bucketPath(b), it.name))
			}
		}
	}
	for _, p := range oldest {
		_, s, err := q.s.get(ctx, p)
		if isNoNode(err) {
			continue // taken meanwhile: the next one is the oldest
		}
		if err != nil {
			return st, err
		}
		st.Oldest = time.UnixMilli(s.Ctime).UTC()
		break
	}
	if q.ack {
		kids, err := q.s.children(ctx, joinPath(q.dir, claimsDir))
		if err != nil && !isNoNode(err) {
			return st, err
		}
		st.Claimed = len(kids)
	}
	return st, nil
}

// slicesSortBySeq orders items by sequence number alone (wrap-safe).
func slicesSortBySeq(items []qitem) {
	slices.SortStableFunc(items, func(a, b qitem) int {
		switch {
		case a.seq == b.seq:
			return 0
		case seqBefore(a.seq, b.seq):
			return -1
		}
		return 1
	})
}

// Stats returns the number of items and the oldest item's age. It lists
// every bucket once.
func (q *Queue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// Stats returns the number of items, claimed ones and the oldest item's
// age. It lists every bucket once.
func (q *AckQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// Stats returns the number of items per priority and the oldest item's age.
func (q *PriorityQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// Stats returns the number of items per priority, claimed ones and the
// oldest item's age.
func (q *AckPriorityQueue[T]) Stats(ctx context.Context) (QueueStats, error) { return q.q.stats(ctx) }

// Raised reports whether the barrier is up (its node exists).
func (b *Barrier) Raised(ctx context.Context) (bool, error) {
	if b.err != nil {
		return false, b.err
	}
	return b.s.Exists(ctx, b.node)
}

// DoubleBarrierState is a snapshot of a double barrier.
type DoubleBarrierState struct {
	Participants []Holder // entered participants in order, with owner metadata (Holds is true for all)
	Ready        bool     // the ready node exists: Size participants had entered
}

// State returns the participants that have entered and not left, and
// whether the barrier is ready.
func (d *DoubleBarrier) State(ctx context.Context) (DoubleBarrierState, error) {
	var st DoubleBarrierState
	if d.err != nil {
		return st, d.err
	}
	ps, err := d.s.holders(ctx, d.dir, curatorParticipants)
	if err != nil {
		return st, err
	}
	st.Participants = ps
	st.Ready, err = d.s.Exists(ctx, d.readyPath())
	return st, err
}

// Candidate is one candidate node of an election.
type Candidate[T any] struct {
	Node    string    // full znode path
	Seq     int32     // sequence number
	Created time.Time // creation time (server clock)
	Payload T         // the candidate's payload
}

// Candidates returns the candidates in queue order: the first leads, or is
// about to (see State for the acknowledged leader). Candidates that leave
// while being read are left out; a missing directory gives none.
func (e *Election[T]) Candidates(ctx context.Context) ([]Candidate[T], error) {
	if e.err != nil {
		return nil, e.err
	}
	kids, err := e.s.children(ctx, e.dir)
	if isNoNode(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Candidate[T]
	for _, c := range curatorLatch.sortContenders(kids) {
		p := joinPath(e.dir, c.name)
		data, st, err := e.s.get(ctx, p)
		if isNoNode(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		v, err := e.codec.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("election %s: candidate payload: %w", p, err)
		}
		out = append(out, Candidate[T]{Node: p, Seq: c.seq, Created: time.UnixMilli(st.Ctime).UTC(), Payload: v})
	}
	return out, nil
}

// TxStatus is a snapshot of a two-phase commit transaction.
type TxStatus struct {
	Proposed bool         // the transaction node exists
	Votes    []VoteStatus // one per participant, in the handle's order
	Decision Decision     // 0 while undecided
}

// VoteStatus is one participant's state in a transaction.
type VoteStatus struct {
	Participant Participant
	Vote        Decision // 0 while it has not voted
	Joined      bool     // it joined (announced itself) and has not voted yet
	Present     bool     // its presence node exists: joined, alive, not voted yet
}

// Status reads the transaction's votes and decision without deciding
// anything (unlike Outcome). A transaction not proposed yet has Proposed
// false.
func (t *TwoPhaseCommit[T]) Status(ctx context.Context) (TxStatus, error) {
	var st TxStatus
	if t.err != nil {
		return st, t.err
	}
	ok, err := t.s.Exists(ctx, t.dir)
	if err != nil || !ok {
		return st, err
	}
	st.Proposed = true
	for _, p := range t.parts {
		v := VoteStatus{Participant: p}
		data, _, err := t.s.get(ctx, t.votePath(p))
		switch {
		case isNoNode(err):
		case err != nil:
			return st, err
		case string(data) == txJoined:
			v.Joined = true
		default:
			v.Vote, _ = parseDecision(data)
		}
		if v.Present, err = t.s.Exists(ctx, t.presencePath(p)); err != nil {
			return st, err
		}
		st.Votes = append(st.Votes, v)
	}
	data, _, err := t.s.get(ctx, t.decisionPath())
	switch {
	case isNoNode(err):
	case err != nil:
		return st, err
	default:
		st.Decision, _ = parseDecision(data)
	}
	return st, nil
}
