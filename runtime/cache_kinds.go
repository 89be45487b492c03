package runtime

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// A LockCache mirrors who holds and who waits for every instance of a
// lock resource (an exclusive lock or a read/write lock, in either
// layout): a Cache over the contender nodes one level below each
// instance's directory, whose states it derives from them in memory. It
// reads each contender node once when it appears (its owner metadata);
// the order of the nodes (their sequence numbers) says who holds.
//
// Its methods (Run, Sync, Get, Snapshot, Len, Events, Mode, Stats, Err)
// are those of the cache of the contender nodes, with the instance's
// LockState as the value: Get(k) gives it from memory; Events has one
// event per change of an instance's contenders (Added with its first,
// Removed with its last).
type LockCache[K comparable] struct {
	*childCache[K, lockNodeData, LockState]
}

// lockNodeData is a contender node's data as the cache decodes it.
type lockNodeData struct {
	owner Owner
	known bool
}

type lockNodeCodec struct{}

func (lockNodeCodec) Encode(lockNodeData) ([]byte, error) { return nil, nil }
func (lockNodeCodec) Decode(data []byte) (lockNodeData, error) {
	o, ok := parseOwner(data)
	return lockNodeData{owner: o, known: ok}, nil
}

// LockState is one lock instance as a LockCache mirrors it: its holders
// (one for an exclusive lock; the readers before the first writer, or one
// writer, for a read/write lock) and its waiters, each in queue order. A
// Holder's Holds says which; Token is its node's creation zxid.
type LockState struct {
	Holders []Holder
	Waiters []Holder
}

// Held reports whether the instance has a holder.
func (s LockState) Held() bool { return len(s.Holders) > 0 }

// NewLockCache returns a cache of the exclusive lock instances of tmpl
// (the lock directories, as NewLock's paths), keyed by key(parameters),
// with the node names of layout (LayoutCurator or LayoutKazoo). opts
// are the Cache's: WithMaxNodes bounds the contender nodes held. It
// holds nothing until Run runs it on a session; it fails only when tmpl
// is invalid.
func NewLockCache[K comparable](tmpl Template, key func(Params) K, layout Layout, opts ...CacheOption) (*LockCache[K], error) {
	fam := curatorMutex
	if layout == LayoutKazoo {
		fam = kazooMutex
	}
	return newLockCache(tmpl, key, fam, opts)
}

// NewRWLockCache is NewLockCache for read/write lock instances (as
// NewRWLock's paths): the holders are the readers before the first
// writer, or that writer (Holder.Read tells a reader).
func NewRWLockCache[K comparable](tmpl Template, key func(Params) K, layout Layout, opts ...CacheOption) (*LockCache[K], error) {
	fam := curatorRW
	if layout == LayoutKazoo {
		fam = kazooRW
	}
	return newLockCache(tmpl, key, fam, opts)
}

func newLockCache[K comparable](tmpl Template, key func(Params) K, fam *family, opts []CacheOption) (*LockCache[K], error) {
	derive := func(es []*CacheEntry[childKey[K], lockNodeData]) (LockState, []string) { return deriveLock(fam, es) }
	c, err := newChildCache(tmpl, key, Codec[lockNodeData](lockNodeCodec{}), derive, opts)
	if err != nil {
		return nil, err
	}
	return &LockCache[K]{c}, nil
}

// derive orders the contender nodes of one instance and tells holders
// from waiters; children that are not contenders of the lock's family
// are left out.
// It returns the state and the paths of its nodes, holders first.
func deriveLock[K comparable](fam *family, es []*CacheEntry[childKey[K], lockNodeData]) (LockState, []string) {
	byName := make(map[string]*CacheEntry[childKey[K], lockNodeData], len(es))
	names := make([]string, 0, len(es))
	for _, e := range es {
		byName[e.Key.name] = e
		names = append(names, e.Key.name)
	}
	cs := fam.sortContenders(names)
	var st LockState
	var shown []string
	for i, c := range cs {
		e := byName[c.name]
		h := Holder{Node: e.Path, Seq: c.seq, Token: e.Stat.Czxid, Created: time.UnixMilli(e.Stat.Ctime).UTC(),
			Owner: e.Value.owner, Known: e.Value.known, Holds: fam.blocker(cs, i) < 0,
			Read: len(fam.markers) == 2 && c.kind == kindRead}
		if h.Holds {
			st.Holders = append(st.Holders, h)
		} else {
			st.Waiters = append(st.Waiters, h)
		}
		shown = append(shown, h.Node)
	}
	return st, shown
}

// A GroupCache mirrors the members of every instance of a group resource:
// a Cache over the member nodes below each instance's directory, each
// decoded with the group's codec, listed in the order they joined (their
// creation zxid), as Group.Members lists them. Its methods are LockCache's
// (see there), with the instance's GroupState as the value.
type GroupCache[K comparable, T any] struct {
	*childCache[K, T, GroupState[T]]
}

// GroupState is one group instance as a GroupCache mirrors it.
type GroupState[T any] struct {
	// Members are the members in join order. A member whose data does
	// not decode is there with Err set (it wraps ErrDecode).
	Members []GroupMember[T]
}

// GroupMember is one member of a GroupState.
type GroupMember[T any] struct {
	Node    string // full znode path
	Value   T
	Czxid   int64 // the zxid that created it: the join order
	Session int64 // its session (EphemeralOwner)
	Err     error
}

// NewGroupCache returns a cache of the group instances of tmpl (the group
// directories, as NewGroup's paths), keyed by key(parameters), members
// decoded with codec. With LayoutKazoo only children whose names hold
// kazoo Party's marker are members, as for Group; with LayoutCurator,
// every child. opts are the Cache's (WithMaxNodes bounds the members
// held). It holds nothing until Run; it fails only when tmpl is invalid.
func NewGroupCache[K comparable, T any](tmpl Template, key func(Params) K, codec Codec[T], layout Layout, opts ...CacheOption) (*GroupCache[K, T], error) {
	derive := func(es []*CacheEntry[childKey[K], T]) (GroupState[T], []string) {
		slices.SortFunc(es, func(a, b *CacheEntry[childKey[K], T]) int {
			return cmp.Or(cmp.Compare(a.Stat.Czxid, b.Stat.Czxid), strings.Compare(a.Path, b.Path))
		})
		var st GroupState[T]
		var shown []string
		for _, e := range es {
			if layout == LayoutKazoo && !strings.Contains(e.Key.name, kazooPartyMarker) {
				continue
			}
			st.Members = append(st.Members, GroupMember[T]{Node: e.Path, Value: e.Value, Czxid: e.Stat.Czxid,
				Session: e.Stat.EphemeralOwner, Err: e.Err})
			shown = append(shown, e.Path)
		}
		return st, shown
	}
	c, err := newChildCache(tmpl, key, codec, derive, opts)
	if err != nil {
		return nil, err
	}
	return &GroupCache[K, T]{c}, nil
}

// A DoubleBarrierCache mirrors every instance of a double barrier
// resource: the participants that have entered and not left, in order,
// and whether the barrier is ready (its ready node exists), as
// DoubleBarrier.State reads them, from a Cache over the nodes below each
// instance's directory. Its methods are LockCache's (see there), with
// the instance's DoubleBarrierState as the value; an instance is there
// while it has a participant or its ready node.
type DoubleBarrierCache[K comparable] struct {
	*childCache[K, lockNodeData, DoubleBarrierState]
}

// NewDoubleBarrierCache returns a cache of the double barrier instances
// of tmpl (as NewDoubleBarrier's paths), keyed by key(parameters). opts
// are the Cache's (WithMaxNodes bounds the nodes held). It holds nothing
// until Run; it fails only when tmpl is invalid.
func NewDoubleBarrierCache[K comparable](tmpl Template, key func(Params) K, opts ...CacheOption) (*DoubleBarrierCache[K], error) {
	derive := func(es []*CacheEntry[childKey[K], lockNodeData]) (DoubleBarrierState, []string) {
		st, shown := deriveLock(curatorParticipants, es)
		ds := DoubleBarrierState{Participants: st.Holders}
		for _, e := range es {
			if e.Key.name == readyName {
				ds.Ready = true
				shown = append(shown, e.Path)
			}
		}
		return ds, shown
	}
	c, err := newChildCache(tmpl, key, Codec[lockNodeData](lockNodeCodec{}), derive, opts)
	if err != nil {
		return nil, err
	}
	return &DoubleBarrierCache[K]{c}, nil
}
