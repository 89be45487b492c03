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
	"strings"
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
// sections is set, the one for Kind, unless Error is set. The section types
// and their readers are in the files of their kinds (lock.go, queue.go, ...).
type Resource struct {
	Name   string  `json:"name"`             // the resource's name in the spec
	Kind   string  `json:"kind"`             // the spec kind
	Path   string  `json:"path"`             // the instance's znode path
	Params []Param `json:"params,omitempty"` // path parameter values
	Error  string  `json:"error,omitempty"`  // why the state could not be read
	// NoInstances is set on the one entry of a resource with path
	// parameters none of whose instances exists; Path is then the
	// declared path, parameters and all, and no section is set.
	NoInstances bool `json:"no_instances,omitempty"`

	Lock          *LockState          `json:"lock,omitempty"`           // lock, rwlock, semaphore
	Lease         *LeaseState         `json:"lease,omitempty"`          // lease
	Queue         *QueueState         `json:"queue,omitempty"`          // queue, priority_queue, delay_queue
	Barrier       *BarrierState       `json:"barrier,omitempty"`        // barrier
	DoubleBarrier *DoubleBarrierState `json:"double_barrier,omitempty"` // double_barrier
	Election      *ElectionState      `json:"election,omitempty"`       // election
	Group         *GroupState         `json:"group,omitempty"`          // group
	Partitioner   *PartitionerState   `json:"partitioner,omitempty"`    // partitioner
	Config        *ConfigState        `json:"config,omitempty"`         // config
	Counter       *CounterState       `json:"counter,omitempty"`        // counter
	Transaction   *TxState            `json:"transaction,omitempty"`    // two_phase_commit
	Service       *ServiceState       `json:"service,omitempty"`        // service
}

// section is the state of one instance: one of the kinds' state types
// (LockState, QueueState, ...), each in its kind's file, where it renders
// itself for Text and fills in its ages.
type section interface {
	summary() string                     // the STATE column
	details() [][3]string                // the indented lines: role, who, how long
	setAges(age func(time.Time) float64) // the age fields, from creation times
}

// section returns the section that is set, nil when none is (an error).
// TestSections checks that every section field of Resource is listed.
func (r *Resource) section() section {
	switch {
	case r.Lock != nil:
		return r.Lock
	case r.Lease != nil:
		return r.Lease
	case r.Queue != nil:
		return r.Queue
	case r.Barrier != nil:
		return r.Barrier
	case r.DoubleBarrier != nil:
		return r.DoubleBarrier
	case r.Election != nil:
		return r.Election
	case r.Group != nil:
		return r.Group
	case r.Partitioner != nil:
		return r.Partitioner
	case r.Config != nil:
		return r.Config
	case r.Counter != nil:
		return r.Counter
	case r.Transaction != nil:
		return r.Transaction
	case r.Service != nil:
		return r.Service
	}
	return nil
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

// ErrRootMissing is the error of CheckRoot when the spec's root node does
// not exist: nothing of the spec has ever run against these servers.
var ErrRootMissing = errors.New("root does not exist")

// CheckRoot returns an error wrapping ErrRootMissing when the root of s
// does not exist in the tree sess reads, and any error reading it.
func CheckRoot(ctx context.Context, sess *runtime.Session, s *spec.Spec) error {
	root := s.RootPath()
	ok, err := sess.Exists(ctx, root)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", root, ErrRootMissing)
	}
	return nil
}

// Select returns a copy of s holding only the resources named in names, in
// spec order, or an error naming the first name s does not declare. No
// names selects every resource.
func Select(s *spec.Spec, names []string) (*spec.Spec, error) {
	if len(names) == 0 {
		return s, nil
	}
	known := map[string]bool{}
	for _, r := range s.Resources {
		known[r.Name] = true
	}
	want := map[string]bool{}
	for _, n := range names {
		if !known[n] {
			declared := make([]string, len(s.Resources))
			for i, r := range s.Resources {
				declared[i] = r.Name
			}
			return nil, fmt.Errorf("no resource %q in %s; it declares: %s", n, s.File, strings.Join(declared, ", "))
		}
		want[n] = true
	}
	c := *s
	c.Resources = nil
	for _, r := range s.Resources {
		if want[r.Name] {
			c.Resources = append(c.Resources, r)
		}
	}
	return &c, nil
}

// Gather reads the state of every declared resource of s through sess:
// GatherFrom with a Mirror (the one zkgen serve follows) run on sess until
// Gather returns.
func Gather(ctx context.Context, sess *runtime.Session, s *spec.Spec) (*Snapshot, error) {
	m, stop, err := Follow(ctx, sess, s)
	if err != nil {
		return nil, err
	}
	defer stop()
	return GatherFrom(ctx, sess, m, s)
}

// GatherFrom reads the state of every declared resource of s through
// sess, whose instances m (running on sess: Follow) holds once synced.
// Problems with one resource (a node that cannot be decoded, a permission
// error) are reported in its Error field; the error returned is for a
// failure of the session itself or ctx. A resource with path parameters
// none of whose instances exists gets one entry with NoInstances set.
func GatherFrom(ctx context.Context, sess *runtime.Session, m *Mirror, s *spec.Spec) (*Snapshot, error) {
	if err := m.Sync(ctx); err != nil {
		return nil, err
	}
	snap := &Snapshot{Spec: s.File, Root: s.RootPath(), Resources: []Resource{}}
	now := time.Now()
	for _, r := range s.Resources {
		ins, err := m.Instances(r)
		if err != nil {
			snap.Resources = append(snap.Resources, Failed(r, err))
			continue
		}
		if len(ins) == 0 {
			snap.Resources = append(snap.Resources, Placeholder(r))
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

// setAges fills the age fields from Taken.
func setAges(s *Snapshot) {
	age := func(t time.Time) float64 { return s.Taken.Sub(t).Round(time.Millisecond).Seconds() }
	for i := range s.Resources {
		if sec := s.Resources[i].section(); sec != nil {
			sec.setAges(age)
		}
	}
}
