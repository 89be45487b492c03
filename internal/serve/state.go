package serve

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/zkgen/zkgen/internal/graph"
	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/runtime"
)

// State is what /api/state serves and the live page draws: the snapshot
// zkgen inspect --json prints (its fields, unchanged, at the top level),
// and the model's own facts beside it.
type State struct {
	*inspect.Snapshot
	// ZooKeeperUp is false during an outage: the resources are then what
	// the model last read, and Outage says since when and why.
	ZooKeeperUp bool    `json:"zookeeper_up"`
	Outage      *Outage `json:"outage,omitempty"`
	Session     string  `json:"session,omitempty"` // the model's session id, hex
	// Cache is how the model learns of changes.
	Cache CacheState `json:"cache"`
	// Cut counts, per resource, the instances past --max-instances that
	// the model does not follow.
	Cut map[string]int `json:"instances_cut,omitempty"`
	// Topology is the spec's resources as zkgen graph draws them: boxes
	// by first path segment, each resource with its settings.
	Topology []Box `json:"topology"`
}

// CacheState is the model's mirror of the tree (inspect.Mirror) on the
// current session.
type CacheState struct {
	// Mode is "persistent" (one persistent recursive watch on the spec's
	// root, ZooKeeper 3.6 and later), "one-shot" (ZooKeeper 3.5: one-shot
	// watches) or "starting" (no watch set yet).
	Mode string `json:"mode"`
	// Watches is zkgen_serve_watches: 1 in persistent mode; in one-shot
	// mode the one-shot watches set.
	Watches int64 `json:"watches"`
	// Instances is the number of instances the mirror holds.
	Instances int `json:"instances"`
	// Notifications counts the notifications that named an instance.
	Notifications int64 `json:"notifications"`

	requests int64 // the mirror's and the watches' requests on this session
}

// cacheLocked returns the state of the current session's mirror; m.mu is
// held.
func (m *Model) cacheLocked() CacheState {
	cs := CacheState{Mode: runtime.CacheStarting.String()}
	if m.mirror == nil {
		return cs
	}
	st := m.mirror.Stats()
	cs.Mode, cs.Instances, cs.Notifications = st.Mode.String(), st.Nodes, st.Notifications
	cs.requests = st.Lists + st.Reads
	switch st.Mode {
	case runtime.CachePersistent:
		cs.Watches = 1 // the caches share the server's one watch on the root
	case runtime.CacheOneShot:
		cs.Watches = st.Watches + int64(st.WatchesBelow)
	}
	return cs
}

// Outage is why ZooKeeper does not answer the model, since when.
type Outage struct {
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// Box is one group of resources of the drawing.
type Box struct {
	Name      string `json:"name"`
	Resources []Node `json:"resources"`
}

// Node is one declared resource of the drawing.
type Node struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Path     string   `json:"path"`
	Settings []string `json:"settings,omitempty"`
}

// JSON returns the state at now as JSON.
func (m *Model) JSON(now time.Time) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return json.Marshal(m.stateLocked(now))
}

// stateLocked builds the state; m.mu is held (the sections' ages are set
// in place).
func (m *Model) stateLocked(now time.Time) State {
	s := m.opt.Spec
	snap := &inspect.Snapshot{Spec: s.File, Root: s.RootPath(), Resources: []inspect.Resource{}}
	for _, r := range s.Resources {
		if err, ok := m.listErr[r.Name]; ok {
			snap.Resources = append(snap.Resources, inspect.Failed(r, err))
			continue
		}
		ins := m.insts[r.Name]
		if len(ins) == 0 && len(r.Params) > 0 && m.sessions > 0 {
			snap.Resources = append(snap.Resources, inspect.Placeholder(r))
			continue
		}
		for _, in := range ins {
			if in.ok {
				snap.Resources = append(snap.Resources, in.res)
			}
		}
	}
	snap.SetAges(now)
	st := State{Snapshot: snap, ZooKeeperUp: m.up, Cache: m.cacheLocked(), Topology: topology(m)}
	if !m.up {
		st.Outage = &Outage{Since: m.since, Reason: m.reason}
	}
	if m.session != 0 {
		st.Session = fmt.Sprintf("0x%x", m.session)
	}
	for name, n := range m.cut {
		if n > 0 {
			if st.Cut == nil {
				st.Cut = map[string]int{}
			}
			st.Cut[name] = n
		}
	}
	return st
}

func topology(m *Model) []Box {
	var out []Box
	for _, g := range graph.Groups(m.opt.Spec) {
		b := Box{Name: g.Name, Resources: []Node{}}
		for _, r := range g.Resources {
			b.Resources = append(b.Resources, Node{Name: r.Name, Kind: string(r.Kind), Path: r.FullPath, Settings: r.Settings()})
		}
		out = append(out, b)
	}
	return out
}
