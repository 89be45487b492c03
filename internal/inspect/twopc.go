package inspect

import (
	"context"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindTwoPhaseCommit, kindOps{read: readTwoPhaseCommit, provision: provisionParent,
		// a vote is a setData on the participant's node
		watch: []watchRule{data(""), kids(""), data("*")}})
}

// TxState is a two-phase commit transaction.
type TxState struct {
	Proposed bool   `json:"proposed"`
	Decision string `json:"decision,omitempty"` // "commit" or "abort" once decided
	Votes    []Vote `json:"votes"`
}

// Vote is one participant's state: "pending" (not joined, not voted),
// "joined" (present, not voted), "gone" (joined, then its session ended
// before voting), "commit" or "abort".
type Vote struct {
	Participant string `json:"participant"`
	State       string `json:"state"`
}

func readTwoPhaseCommit(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	parts := make([]runtime.Participant, len(r.Participants))
	for i, n := range r.Participants {
		parts[i] = runtime.Participant(n.Name)
	}
	ts, err := runtime.NewTwoPhaseCommit(sess, p, runtime.BytesCodec(), parts).Status(ctx)
	if err != nil {
		return err
	}
	st := &TxState{Proposed: ts.Proposed, Votes: []Vote{}}
	if ts.Decision != 0 {
		st.Decision = ts.Decision.String()
	}
	for _, v := range ts.Votes {
		state := "pending"
		switch {
		case v.Vote != 0:
			state = v.Vote.String()
		case v.Joined && v.Present:
			state = "joined"
		case v.Joined:
			state = "gone"
		}
		st.Votes = append(st.Votes, Vote{Participant: string(v.Participant), State: state})
	}
	res.Transaction = st
	return nil
}

func (t *TxState) summary() string {
	switch {
	case !t.Proposed:
		return "not proposed"
	case t.Decision != "":
		return "decided: " + t.Decision
	}
	return "voting"
}

func (t *TxState) details() [][3]string {
	var out [][3]string
	for _, v := range t.Votes {
		out = append(out, [3]string{"vote", v.Participant, v.State})
	}
	return out
}

func (t *TxState) setAges(func(time.Time) float64) {}
