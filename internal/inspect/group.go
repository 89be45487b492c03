package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindGroup, kindOps{read: readGroup, provision: provisionPath,
		watch: []watchRule{kids("")}})
}

// GroupState lists a group's members in join order.
type GroupState struct {
	Members []Value `json:"members"`
}

func readGroup(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	ms, err := runtime.NewGroup(sess, p, runtime.BytesCodec(), bind.HandleOptions(r)...).Members(ctx)
	if err != nil {
		return err
	}
	st := &GroupState{Members: []Value{}}
	for _, m := range ms {
		st.Members = append(st.Members, valueOf(m))
	}
	res.Group = st
	return nil
}

func (g *GroupState) summary() string { return plural(len(g.Members), "member") }

func (g *GroupState) details() [][3]string {
	var out [][3]string
	for i, m := range g.Members {
		out = append(out, [3]string{fmt.Sprintf("member %d", i+1), show(&m), ""})
	}
	return out
}

func (g *GroupState) setAges(func(time.Time) float64) {}
