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
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (runtime.QueueStats, []*runtime.DeadLetter[[]byte], error) {
			if r.Delivery == spec.AtLeastOnce {
				q := runtime.NewAckQueue(sess, p, runtime.BytesCodec())
				return ackQueueState(ctx, q.Stats, q.DeadLetters)
			}
			st, err := runtime.NewQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
			return st, nil, err
		})})
	register(spec.KindPriorityQueue, kindOps{provision: provisionPath, watch: queueWatches(),
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (runtime.QueueStats, []*runtime.DeadLetter[[]byte], error) {
			if r.Delivery == spec.AtLeastOnce {
				q := runtime.NewAckPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities))
				return ackQueueState(ctx, q.Stats, q.DeadLetters)
			}
			st, err := runtime.NewPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities)).Stats(ctx)
			return st, nil, err
		})})
	register(spec.KindDelayQueue, kindOps{provision: provisionPath, watch: queueWatches(),
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (runtime.QueueStats, []*runtime.DeadLetter[[]byte], error) {
			if r.Delivery == spec.AtLeastOnce {
				q := runtime.NewAckDelayQueue(sess, p, runtime.BytesCodec())
				return ackQueueState(ctx, q.Stats, q.DeadLetters)
			}
			st, err := runtime.NewDelayQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
			return st, nil, err
		})})
}

// ackQueueState reads an at-least-once queue's statistics and dead letters.
func ackQueueState(ctx context.Context, stats func(context.Context) (runtime.QueueStats, error),
	dead func(context.Context) ([]*runtime.DeadLetter[[]byte], error)) (runtime.QueueStats, []*runtime.DeadLetter[[]byte], error) {
	st, err := stats(ctx)
	if err != nil {
		return st, nil, err
	}
	ds, err := dead(ctx)
	return st, ds, err
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
func queueReader(stats func(context.Context, *runtime.Session, *spec.Resource, runtime.Path) (runtime.QueueStats, []*runtime.DeadLetter[[]byte], error)) func(context.Context, *runtime.Session, *spec.Resource, runtime.Path, *Resource) error {
	return func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
		qs, dead, err := stats(ctx, sess, r, p)
		if err != nil {
			return err
		}
		st := &QueueState{Depth: qs.Len, Claimed: qs.Claimed}
		for _, d := range dead {
			st.DeadLetters = append(st.DeadLetters, DeadLetter{Node: d.Node(), Moved: d.Moved, Payload: valueOf(d.Value), Reason: d.Reason})
		}
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

func (q *QueueState) details() [][3]string {
	var out [][3]string
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
