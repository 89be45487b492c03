package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindBarrier, kindOps{read: readBarrier, provision: provisionParent,
		watch: []watchRule{data("")}})
	register(spec.KindDoubleBarrier, kindOps{read: readDoubleBarrier, provision: provisionPath,
		watch: []watchRule{kids(""), data(runtime.DoubleBarrierReady)}})
}

// BarrierState says whether a barrier is up.
type BarrierState struct {
	Up bool `json:"up"`
}

// DoubleBarrierState lists a double barrier's participants.
type DoubleBarrierState struct {
	Size         int         `json:"size"`
	Ready        bool        `json:"ready"`
	Participants []Contender `json:"participants"`
}

func readBarrier(ctx context.Context, sess *runtime.Session, _ *spec.Resource, p runtime.Path, res *Resource) error {
	up, err := runtime.NewBarrier(sess, p).Raised(ctx)
	if err != nil {
		return err
	}
	res.Barrier = &BarrierState{Up: up}
	return nil
}

func readDoubleBarrier(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	ds, err := runtime.NewDoubleBarrier(sess, p, r.Size).State(ctx)
	if err != nil {
		return err
	}
	st := &DoubleBarrierState{Size: r.Size, Ready: ds.Ready, Participants: []Contender{}}
	for _, h := range ds.Participants {
		st.Participants = append(st.Participants, contender(h))
	}
	res.DoubleBarrier = st
	return nil
}

func (b *BarrierState) summary() string {
	if b.Up {
		return "up"
	}
	return "down"
}

func (b *BarrierState) details() [][3]string { return nil }

func (b *BarrierState) setAges(func(time.Time) float64) {}

func (d *DoubleBarrierState) summary() string {
	s := fmt.Sprintf("%d/%d entered", len(d.Participants), d.Size)
	if d.Ready {
		s += ", ready"
	}
	return s
}

func (d *DoubleBarrierState) details() [][3]string {
	var out [][3]string
	for _, c := range d.Participants {
		out = append(out, [3]string{"participant", who(c), "entered " + age(c.AgeSeconds) + " ago"})
	}
	return out
}

func (d *DoubleBarrierState) setAges(age func(time.Time) float64) {
	for j := range d.Participants {
		d.Participants[j].AgeSeconds = age(d.Participants[j].Created)
	}
}
