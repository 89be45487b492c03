package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindQueue, kindOps{provision: provisionPath, watch: queueWatches(),
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (queueRead, error) {
			if r.Delivery == spec.AtLeastOnce {
				q := runtime.NewAckQueue(sess, p, runtime.BytesCodec())
				return ackQueueState(ctx, q.Stats, q.DeadLetters, q.Claims)
			}
			st, err := runtime.NewQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
			return queueRead{stats: st}, err
		})})
	register(spec.KindPriorityQueue, kindOps{provision: provisionPath, watch: queueWatches(),
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (queueRead, error) {
			if r.Delivery == spec.AtLeastOnce {
				q := runtime.NewAckPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities))
				return ackQueueState(ctx, q.Stats, q.DeadLetters, q.Claims)
			}
			st, err := runtime.NewPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities)).Stats(ctx)
			return queueRead{stats: st}, err
		})})
	register(spec.KindDelayQueue, kindOps{provision: provisionPath, watch: queueWatches(),
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (queueRead, error) {
			if r.Delivery == spec.AtLeastOnce {
				q := runtime.NewAckDelayQueue(sess, p, runtime.BytesCodec())
				return ackQueueState(ctx, q.Stats, q.DeadLetters, q.Claims)
			}
			st, err := runtime.NewDelayQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
			return queueRead{stats: st}, err
		})})
}

// queueRead is what a queue's reader reads: its statistics and, for an
// at-least-once queue, its dead letters and claims.
type queueRead struct {
	stats  runtime.QueueStats
	dead   []*runtime.DeadLetter[[]byte]
	claims []runtime.Claim
}

// ackQueueState reads an at-least-once queue's statistics, dead letters
// and claims.
func ackQueueState(ctx context.Context, stats func(context.Context) (runtime.QueueStats, error),
	dead func(context.Context) ([]*runtime.DeadLetter[[]byte], error), claims func(context.Context) ([]runtime.Claim, error)) (queueRead, error) {
	var qr queueRead
	var err error
	if qr.stats, err = stats(ctx); err != nil {
		return qr, err
	}
	if qr.dead, err = dead(ctx); err != nil {
		return qr, err
	}
	qr.claims, err = claims(ctx)
	return qr, err
}

// QueueState is a queue's depth.
type QueueState struct {
	Depth      int             `json:"depth"`                // items, claimed ones included
	Priorities []PriorityDepth `json:"priorities,omitempty"` // priority queues, in serving order
	Claimed    int             `json:"claimed,omitempty"`    // at-least-once: claimed, not acked
	Oldest     *time.Time      `json:"oldest,omitempty"`     // the oldest item's creation time
	OldestAge  float64         `json:"oldest_age_seconds"`   // 0 when empty
	NextDue    *time.Time      `json:"next_due,omitempty"`   // delay queues: the earliest due time
	// DeadLetters are the items moved out after too many deliveries
	// (at-least-once queues with dead_letter_after), oldest move first.
	DeadLetters []DeadLetter `json:"dead_letters,omitempty"`
	// Claims are the items consumers hold now (at-least-once queues):
	// delivered, not yet acked, released or given back; the longest held
	// first.
	Claims []QueueClaim `json:"claims,omitempty"`
	// Consumers are the sessions that hold Claims, the longest holding
	// first. A consumer that holds none (one waiting for items, or any
	// consumer of an at-most-once queue) leaves nothing in ZooKeeper to
	// show.
	Consumers []QueueConsumer `json:"consumers,omitempty"`
}

// QueueClaim is one item a consumer holds.
type QueueClaim struct {
	Item       string    `json:"item"`              // the item's znode path
	Session    string    `json:"session"`           // the consumer's session id, 0x-hex
	Since      time.Time `json:"since"`             // when it was claimed (server clock)
	AgeSeconds float64   `json:"age_seconds"`       // how long it has been held
	Attempt    int       `json:"attempt,omitempty"` // its delivery: 1 the first (runtime.Delivery.Attempt)
}

// QueueConsumer is one session holding claims of a queue.
type QueueConsumer struct {
	Session    string    `json:"session"`     // 0x-hex
	Claimed    int       `json:"claimed"`     // items it holds
	Since      time.Time `json:"since"`       // when it claimed the one it has held longest
	AgeSeconds float64   `json:"age_seconds"` // how long it has held that one
}

// DeadLetter is one item in a queue's dead letters.
type DeadLetter struct {
	Node       string    `json:"node"`
	Moved      time.Time `json:"moved"`       // when it was moved (server clock)
	AgeSeconds float64   `json:"age_seconds"` // since it was moved
	Payload    Value     `json:"payload"`
	Reason     string    `json:"reason,omitempty"` // why it died, when known (runtime.DeadLetter.Reason)
}

// PriorityDepth is the number of items of one priority.
type PriorityDepth struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"`
}

// queueReader returns the read function of a queue kind whose statistics
// stats reads.
func queueReader(stats func(context.Context, *runtime.Session, *spec.Resource, runtime.Path) (queueRead, error)) func(context.Context, *runtime.Session, *spec.Resource, runtime.Path, *Resource) error {
	return func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
		qr, err := stats(ctx, sess, r, p)
		if err != nil {
			return err
		}
		qs := qr.stats
		st := &QueueState{Depth: qs.Len, Claimed: qs.Claimed}
		for _, d := range qr.dead {
			st.DeadLetters = append(st.DeadLetters, DeadLetter{Node: d.Node(), Moved: d.Moved, Payload: valueOf(d.Value), Reason: d.Reason})
		}
		st.Claims, st.Consumers = claimsOf(qr.claims)
		for i, n := range qs.ByPriority {
			if i < len(r.Priorities) {
				st.Priorities = append(st.Priorities, PriorityDepth{Name: r.Priorities[i].Name, Depth: n})
			}
		}
		if !qs.Oldest.IsZero() {
			o := qs.Oldest
			st.Oldest = &o
		}
		if !qs.NextDue.IsZero() {
			d := qs.NextDue
			st.NextDue = &d
		}
		res.Queue = st
		return nil
	}
}

// claimsOf returns the claims as inspect shows them, and their consumers,
// the longest holding first.
func claimsOf(cs []runtime.Claim) ([]QueueClaim, []QueueConsumer) {
	var claims []QueueClaim
	var consumers []QueueConsumer
	at := map[string]int{} // session: index in consumers
	for _, c := range cs {
		sess := fmt.Sprintf("0x%x", c.Session)
		claims = append(claims, QueueClaim{Item: c.Item, Session: sess, Since: c.Since, Attempt: c.Attempt})
		i, ok := at[sess]
		if !ok {
			i, at[sess] = len(consumers), len(consumers)
			consumers = append(consumers, QueueConsumer{Session: sess, Since: c.Since})
		}
		consumers[i].Claimed++
	}
	return claims, consumers
}

func (q *QueueState) summary() string {
	s := plural(q.Depth, "item")
	if len(q.Priorities) > 0 {
		var ps []string
		for _, p := range q.Priorities {
			ps = append(ps, fmt.Sprintf("%s %d", p.Name, p.Depth))
		}
		s += " (" + strings.Join(ps, ", ") + ")"
	}
	if q.Claimed > 0 {
		s += fmt.Sprintf(", %d claimed", q.Claimed)
		if len(q.Consumers) > 0 {
			s += " by " + plural(len(q.Consumers), "consumer")
		}
	}
	if q.Oldest != nil {
		s += ", oldest " + age(q.OldestAge)
	}
	if q.NextDue != nil {
		s += ", next due " + q.NextDue.UTC().Format(time.RFC3339)
	}
	if len(q.DeadLetters) > 0 {
		s += ", " + plural(len(q.DeadLetters), "dead letter")
	}
	return s
}

// shownClaims is how many claims the table lists, the longest held; the
// JSON document lists them all.
const shownClaims = 5

func (q *QueueState) details() [][3]string {
	var out [][3]string
	for _, c := range q.Consumers {
		held := "holds 1 item, for " + age(c.AgeSeconds)
		if c.Claimed > 1 {
			held = "holds " + plural(c.Claimed, "item") + ", the longest for " + age(c.AgeSeconds)
		}
		out = append(out, [3]string{"consumer", "session " + c.Session, held})
	}
	for i, c := range q.Claims {
		if i == shownClaims {
			out = append(out, [3]string{"claimed", fmt.Sprintf("%d more", len(q.Claims)-i), "(--json lists them all)"})
			break
		}
		how := "by session " + c.Session + " for " + age(c.AgeSeconds)
		if c.Attempt > 1 {
			how += fmt.Sprintf(", delivery %d", c.Attempt)
		}
		out = append(out, [3]string{"claimed", base(c.Item), how})
	}
	for _, d := range q.DeadLetters {
		why := ""
		if d.Reason != "" {
			why = ": " + oneLine(d.Reason)
		}
		out = append(out, [3]string{"dead letter", show(&d.Payload), "moved " + age(d.AgeSeconds) + " ago" + why + "  " + base(d.Node)})
	}
	return out
}

func (q *QueueState) setAges(age func(time.Time) float64) {
	if q.Oldest != nil {
		q.OldestAge = age(*q.Oldest)
	}
	for i := range q.DeadLetters {
		q.DeadLetters[i].AgeSeconds = age(q.DeadLetters[i].Moved)
	}
	for i := range q.Claims {
		q.Claims[i].AgeSeconds = age(q.Claims[i].Since)
	}
	for i := range q.Consumers {
		q.Consumers[i].AgeSeconds = age(q.Consumers[i].Since)
	}
}

// queueWatches covers every queue layout: the buckets (per priority level
// for priority queues), the claims of at-least-once delivery and the dead
// letters. Items' own nodes are not watched: a put or a take changes its
// bucket's children.
func queueWatches() []watchRule {
	out := []watchRule{kids("")}
	for _, d := range runtime.QueueWatchDirs() {
		out = append(out, kids(d))
	}
	return out
}
