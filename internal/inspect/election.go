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
	register(spec.KindElection, kindOps{read: readElection, provision: provisionPath,
		watch: []watchRule{kids(""), data(runtime.ElectionLeaderNode)}})
}

// ElectionState is the acknowledged leader and the candidates in order.
type ElectionState struct {
	Elected    bool        `json:"elected"`
	Epoch      int64       `json:"epoch,omitempty"`
	Leader     string      `json:"leader,omitempty"`  // the leader's candidate node name
	Payload    *Value      `json:"payload,omitempty"` // the leader's payload
	Candidates []Candidate `json:"candidates"`
}

// Candidate is one election candidate.
type Candidate struct {
	Node       string    `json:"node"`
	Seq        int32     `json:"seq"`
	Created    time.Time `json:"created"`
	AgeSeconds float64   `json:"age_seconds"`
	Payload    Value     `json:"payload"`
}

func readElection(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	e := runtime.NewElection(sess, p, runtime.BytesCodec(), bind.HandleOptions(r)...)
	ls, err := e.State(ctx)
	if err != nil {
		return err
	}
	st := &ElectionState{Elected: ls.Elected, Candidates: []Candidate{}}
	if ls.Elected {
		v := valueOf(ls.Payload)
		st.Epoch, st.Leader, st.Payload = ls.Epoch, ls.Candidate, &v
	}
	cs, err := e.Candidates(ctx)
	if err != nil {
		return err
	}
	for _, c := range cs {
		st.Candidates = append(st.Candidates, Candidate{Node: c.Node, Seq: c.Seq, Created: c.Created, Payload: valueOf(c.Payload)})
	}
	res.Election = st
	return nil
}

func (e *ElectionState) summary() string {
	s := "no leader"
	if e.Elected {
		s = fmt.Sprintf("leader epoch %d: %s", e.Epoch, show(e.Payload))
	}
	return s + ", " + plural(len(e.Candidates), "candidate")
}

func (e *ElectionState) details() [][3]string {
	var out [][3]string
	for i, c := range e.Candidates {
		role := fmt.Sprintf("candidate %d", i+1)
		if e.Elected && base(c.Node) == e.Leader {
			role = "leader"
		}
		out = append(out, [3]string{role, show(&c.Payload), "for " + age(c.AgeSeconds) + "  " + base(c.Node)})
	}
	return out
}

func (e *ElectionState) setAges(age func(time.Time) float64) {
	for j := range e.Candidates {
		e.Candidates[j].AgeSeconds = age(e.Candidates[j].Created)
	}
}
