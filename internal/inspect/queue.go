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
	register(spec.KindQueue, kindOps{provision: provisionPath,
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (runtime.QueueStats, error) {
			if r.Delivery == spec.AtLeastOnce {
				return runtime.NewAckQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
			}
			return runtime.NewQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
		})})
	register(spec.KindPriorityQueue, kindOps{provision: provisionPath,
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (runtime.QueueStats, error) {
			if r.Delivery == spec.AtLeastOnce {
				return runtime.NewAckPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities)).Stats(ctx)
			}
			return runtime.NewPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities)).Stats(ctx)
		})})
	register(spec.KindDelayQueue, kindOps{provision: provisionPath,
		read: queueReader(func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path) (runtime.QueueStats, error) {
			if r.Delivery == spec.AtLeastOnce {
				return runtime.NewAckDelayQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
			}
			return runtime.NewDelayQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
		})})
}

// QueueState is a queue's depth.
type QueueState struct {
	Depth      int             `json:"depth"`                // items, claimed ones included
	Priorities []PriorityDepth `json:"priorities,omitempty"` // priority queues, in serving order
	Claimed    int             `json:"claimed,omitempty"`    // at-least-once: claimed, not acked
	Oldest     *time.Time      `json:"oldest,omitempty"`     // the oldest item's creation time
	OldestAge  float64         `json:"oldest_age_seconds"`   // 0 when empty
	NextDue    *time.Time      `json:"next_due,omitempty"`   // delay queues: the earliest due time
}

// PriorityDepth is the number of items of one priority.
type PriorityDepth struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"`
}

// queueReader returns the read function of a queue kind whose statistics
// stats reads.
func queueReader(stats func(context.Context, *runtime.Session, *spec.Resource, runtime.Path) (runtime.QueueStats, error)) func(context.Context, *runtime.Session, *spec.Resource, runtime.Path, *Resource) error {
	return func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
		qs, err := stats(ctx, sess, r, p)
		if err != nil {
			return err
		}
		st := &QueueState{Depth: qs.Len, Claimed: qs.Claimed}
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
	return s
}

func (q *QueueState) details() [][3]string { return nil }

func (q *QueueState) setAges(age func(time.Time) float64) {
	if q.Oldest != nil {
		q.OldestAge = age(*q.Oldest)
	}
}
