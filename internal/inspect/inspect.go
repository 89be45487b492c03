// Package inspect reads the live state of the resources a zkgen spec
// declares (zkgen inspect), breaks stale locks (zkgen reap) and creates the
// spec's parent nodes (zkgen provision). Gathering talks to ZooKeeper
// through the runtime's read-only views; rendering is pure, so the table and
// the JSON document are tested without a server.
package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Snapshot is the state of every declared resource at one moment. It is
// the document `zkgen inspect --json` prints; field names are stable.
type Snapshot struct {
	Spec      string     `json:"spec"`      // spec file
	Root      string     `json:"root"`      // the spec's root path
	Taken     time.Time  `json:"taken"`     // when the snapshot was taken (this machine's clock)
	Resources []Resource `json:"resources"` // declared resources in spec order, one entry per instance
}

// Resource is one instance of a declared resource. Exactly one of the kind
// sections is set, the one for Kind, unless Error is set.
type Resource struct {
	Name   string  `json:"name"`             // the resource's name in the spec
	Kind   string  `json:"kind"`             // the spec kind
	Path   string  `json:"path"`             // the instance's znode path
	Params []Param `json:"params,omitempty"` // path parameter values
	Error  string  `json:"error,omitempty"`  // why the state could not be read

	Lock          *LockState          `json:"lock,omitempty"`           // lock, rwlock, semaphore
	Queue         *QueueState         `json:"queue,omitempty"`          // queue, priority_queue
	Barrier       *BarrierState       `json:"barrier,omitempty"`        // barrier
	DoubleBarrier *DoubleBarrierState `json:"double_barrier,omitempty"` // double_barrier
	Election      *ElectionState      `json:"election,omitempty"`       // election
	Group         *GroupState         `json:"group,omitempty"`          // group
	Config        *ConfigState        `json:"config,omitempty"`         // config
	Counter       *CounterState       `json:"counter,omitempty"`        // counter
	Transaction   *TxState            `json:"transaction,omitempty"`    // two_phase_commit
}

// LockState lists a lock's holders and waiters in queue order (for a
// semaphore: the lease holders, then the waiters).
type LockState struct {
	Leases  int         `json:"leases,omitempty"` // semaphore: the spec's lease count
	Holders []Contender `json:"holders"`
	Waiters []Contender `json:"waiters"`
}

// Contender is one lock, lease, participant or candidate node.
type Contender struct {
	Node       string    `json:"node"`                       // full znode path
	Seq        int32     `json:"seq"`                        // sequence number
	Mode       string    `json:"mode,omitempty"`             // rwlock: "read" or "write"
	Host       string    `json:"host,omitempty"`             // owner metadata (absent for nodes of other libraries)
	PID        int       `json:"pid,omitempty"`              //
	Session    string    `json:"session,omitempty"`          //
	Purpose    string    `json:"purpose,omitempty"`          //
	Created    time.Time `json:"created"`                    // node creation (server clock)
	AgeSeconds float64   `json:"age_seconds"`                // Taken - Created: how long it has held or waited
	Revoke     bool      `json:"revoke_requested,omitempty"` // someone asked the holder to release
}

// QueueState is a queue's depth.
type QueueState struct {
	Depth      int             `json:"depth"`                // items, claimed ones included
	Priorities []PriorityDepth `json:"priorities,omitempty"` // priority queues, in serving order
	Claimed    int             `json:"claimed,omitempty"`    // at-least-once: claimed, not acked
	Oldest     *time.Time      `json:"oldest,omitempty"`     // the oldest item's creation time
	OldestAge  float64         `json:"oldest_age_seconds"`   // 0 when empty
}

// PriorityDepth is the number of items of one priority.
type PriorityDepth struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"`
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

// GroupState lists a group's members in join order.
type GroupState struct {
	Members []Value `json:"members"`
}

// ConfigState is a config node's value.
type ConfigState struct {
	Exists  bool   `json:"exists"`
	Version int32  `json:"version"` // -1 when absent
	Value   *Value `json:"value,omitempty"`
}

// CounterState is a counter's value (0 when the node is absent).
type CounterState struct {
	Value int64 `json:"value"`
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

// Value is node data shown safely: JSON data as JSON, other printable UTF-8
// as text, anything else as base64. At most one field is set (none for
// empty data).
type Value struct {
	JSON   json.RawMessage `json:"json,omitempty"`
	Text   *string         `json:"text,omitempty"`
	Base64 []byte          `json:"base64,omitempty"`
}

// valueOf classifies data.
func valueOf(data []byte) Value {
	switch {
	case len(data) == 0:
		return Value{}
	case json.Valid(data):
		var buf []byte
		if c, err := compact(data); err == nil {
			buf = c
		} else {
			buf = data
		}
		return Value{JSON: buf}
	case printable(data):
		s := string(data)
		return Value{Text: &s}
	}
	return Value{Base64: append([]byte(nil), data...)}
}

func compact(data []byte) ([]byte, error) {
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func printable(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// Gather reads the state of every declared resource of s through sess.
// Problems with one resource (a node that cannot be decoded, a permission
// error) are reported in its Error field; the error returned is for a
// failure of the session itself or ctx.
func Gather(ctx context.Context, sess *runtime.Session, s *spec.Spec) (*Snapshot, error) {
	snap := &Snapshot{Spec: s.File, Root: rootPath(s), Resources: []Resource{}}
	now := time.Now()
	for _, r := range s.Resources {
		ins, err := Expand(ctx, sess, r)
		if err != nil {
			if fatal(ctx, sess, err) {
				return nil, err
			}
			snap.Resources = append(snap.Resources, Resource{Name: r.Name, Kind: string(r.Kind), Path: r.FullPath, Error: err.Error()})
			continue
		}
		for _, in := range ins {
			res := Resource{Name: r.Name, Kind: string(r.Kind), Path: in.Path, Params: in.Params}
			if err := read(ctx, sess, r, in.Path, &res); err != nil {
				if fatal(ctx, sess, err) {
					return nil, err
				}
				res.Error = err.Error()
			}
			snap.Resources = append(snap.Resources, res)
		}
	}
	snap.Taken = now
	setAges(snap)
	return snap, nil
}

// fatal reports whether err ends the whole gathering.
func fatal(ctx context.Context, sess *runtime.Session, err error) bool {
	return ctx.Err() != nil || sess.Err() != nil || errors.Is(err, runtime.ErrSessionExpired) || errors.Is(err, runtime.ErrClosed)
}

func lockOptions(r *spec.Resource) []runtime.LockOption {
	if r.Layout == "kazoo" {
		return []runtime.LockOption{runtime.WithLayout(runtime.LayoutKazoo)}
	}
	return nil
}

// read fills res with the state of the instance of r at path.
func read(ctx context.Context, sess *runtime.Session, r *spec.Resource, path string, res *Resource) error {
	p := runtime.At(path)
	switch r.Kind {
	case spec.KindLock, spec.KindRWLock, spec.KindSemaphore:
		var hs []runtime.Holder
		var err error
		st := &LockState{Holders: []Contender{}, Waiters: []Contender{}}
		switch r.Kind {
		case spec.KindLock:
			hs, err = runtime.NewLock(sess, p, lockOptions(r)...).Holders(ctx)
		case spec.KindRWLock:
			hs, err = runtime.NewRWLock(sess, p, lockOptions(r)...).Write().Holders(ctx)
		default:
			st.Leases = r.Leases
			hs, err = runtime.NewSemaphore(sess, p, r.Leases).Holders(ctx)
		}
		if err != nil {
			return err
		}
		for _, h := range hs {
			c := contender(h)
			if r.Kind == spec.KindRWLock {
				c.Mode = "write"
				if h.Read {
					c.Mode = "read"
				}
			}
			if h.Holds {
				st.Holders = append(st.Holders, c)
			} else {
				st.Waiters = append(st.Waiters, c)
			}
		}
		res.Lock = st
	case spec.KindQueue, spec.KindPriorityQueue:
		var qs runtime.QueueStats
		var err error
		ack := r.Delivery == "at_least_once"
		switch {
		case r.Kind == spec.KindQueue && ack:
			qs, err = runtime.NewAckQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
		case r.Kind == spec.KindQueue:
			qs, err = runtime.NewQueue(sess, p, runtime.BytesCodec()).Stats(ctx)
		case ack:
			qs, err = runtime.NewAckPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities)).Stats(ctx)
		default:
			qs, err = runtime.NewPriorityQueue(sess, p, runtime.BytesCodec(), len(r.Priorities)).Stats(ctx)
		}
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
		res.Queue = st
	case spec.KindBarrier:
		up, err := runtime.NewBarrier(sess, p).Raised(ctx)
		if err != nil {
			return err
		}
		res.Barrier = &BarrierState{Up: up}
	case spec.KindDoubleBarrier:
		ds, err := runtime.NewDoubleBarrier(sess, p, r.Size).State(ctx)
		if err != nil {
			return err
		}
		st := &DoubleBarrierState{Size: r.Size, Ready: ds.Ready, Participants: []Contender{}}
		for _, h := range ds.Participants {
			st.Participants = append(st.Participants, contender(h))
		}
		res.DoubleBarrier = st
	case spec.KindElection:
		e := runtime.NewElection(sess, p, runtime.BytesCodec())
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
	case spec.KindGroup:
		ms, err := runtime.NewGroup(sess, p, runtime.BytesCodec()).Members(ctx)
		if err != nil {
			return err
		}
		st := &GroupState{Members: []Value{}}
		for _, m := range ms {
			st.Members = append(st.Members, valueOf(m))
		}
		res.Group = st
	case spec.KindConfig:
		data, ver, err := runtime.NewConfig(sess, p, runtime.BytesCodec()).Get(ctx)
		if errors.Is(err, runtime.ErrNoValue) {
			res.Config = &ConfigState{Version: int32(runtime.NoVersion)}
			return nil
		}
		if err != nil {
			return err
		}
		v := valueOf(data)
		res.Config = &ConfigState{Exists: true, Version: int32(ver), Value: &v}
	case spec.KindCounter:
		n, err := runtime.NewCounter(sess, p).Get(ctx)
		if err != nil {
			return err
		}
		res.Counter = &CounterState{Value: n}
	case spec.KindTwoPhaseCommit:
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
	default:
		return fmt.Errorf("kind %s cannot be inspected", r.Kind)
	}
	return nil
}

func contender(h runtime.Holder) Contender {
	return Contender{Node: h.Node, Seq: h.Seq, Host: h.Owner.Host, PID: h.Owner.PID, Session: h.Owner.Session,
		Purpose: h.Owner.Purpose, Created: h.Created, Revoke: !h.Owner.RevokeRequestedAt.IsZero()}
}

// setAges fills the age fields from Taken.
func setAges(s *Snapshot) {
	age := func(t time.Time) float64 { return s.Taken.Sub(t).Round(time.Millisecond).Seconds() }
	for i := range s.Resources {
		r := &s.Resources[i]
		if r.Lock != nil {
			for j := range r.Lock.Holders {
				r.Lock.Holders[j].AgeSeconds = age(r.Lock.Holders[j].Created)
			}
			for j := range r.Lock.Waiters {
				r.Lock.Waiters[j].AgeSeconds = age(r.Lock.Waiters[j].Created)
			}
		}
		if r.DoubleBarrier != nil {
			for j := range r.DoubleBarrier.Participants {
				r.DoubleBarrier.Participants[j].AgeSeconds = age(r.DoubleBarrier.Participants[j].Created)
			}
		}
		if r.Election != nil {
			for j := range r.Election.Candidates {
				r.Election.Candidates[j].AgeSeconds = age(r.Election.Candidates[j].Created)
			}
		}
		if r.Queue != nil && r.Queue.Oldest != nil {
			r.Queue.OldestAge = age(*r.Queue.Oldest)
		}
	}
}
