package runtime

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// A SemaphoreCache mirrors the lease holders and the waiters of every
// instance of a semaphore resource, as Semaphore.Holders lists them: a
// Cache over the lease nodes and the contenders of the semaphore's
// internal lock, whose owner metadata it reads once when a node appears
// and again when its data changes, and whose states it derives in memory.
// In Curator's layout those nodes are two levels below the semaphore's
// directory (<dir>/leases/*, <dir>/locks/*); in kazoo's, the leases are
// the directory's children and the lock is its sibling <dir>-__lock__,
// so the cache watches the directories' parent.
//
// Its methods are LockCache's (see there), with the instance's
// SemaphoreState as the value: an instance is there while it has a lease
// node or a contender for its internal lock.
type SemaphoreCache[K comparable] struct {
	*childCache[K, lockNodeData, SemaphoreState]
}

// SemaphoreState is one semaphore instance as a SemaphoreCache mirrors
// it, with Semaphore.Holders' split: Holders hold a lease (at most Size
// of them; Holds is true), Waiters wait for one (Holds false), in order.
type SemaphoreState struct {
	// Size is the number of leases: the resource's, as given to the
	// cache (kazoo's directory records it too; the cache does not read
	// it).
	Size int
	// Holders are the lease nodes that hold, in lease order (Curator's:
	// their sequence; kazoo's: their creation zxid, Holder.Token).
	Holders []Holder
	// Waiters are the lease nodes beyond Size (an acquirer that created
	// its lease node and waits for a release), then the contenders for
	// the internal lock, in queue order; the lock's holder is left out
	// while it is shown by its lease node.
	Waiters []Holder
}

// Free returns the leases no one holds.
func (s SemaphoreState) Free() int { return max(s.Size-len(s.Holders), 0) }

// NewSemaphoreCache returns a cache of the semaphore instances of tmpl
// (the semaphore directories, as NewSemaphore's paths) of leases leases
// each, keyed by key(parameters), in layout (LayoutCurator or
// LayoutKazoo). opts are the Cache's: WithMaxNodes bounds the lease and
// lock nodes held. It holds nothing until Run runs it on a session; it
// fails only when tmpl is invalid.
func NewSemaphoreCache[K comparable](tmpl Template, key func(Params) K, leases int, layout Layout, opts ...CacheOption) (*SemaphoreCache[K], error) {
	codec := Codec[lockNodeData](lockNodeCodec{})
	if layout == LayoutKazoo {
		derive := func(es []*CacheEntry[childKey[K], lockNodeData]) (SemaphoreState, []string) {
			return deriveKazooSemaphore(es, leases)
		}
		c, err := newSiblingCache(tmpl.withSibling(kazooLockSuffix).Str("node"), max(tmpl.Len(), 1), kazooLockSuffix, key, codec, derive, opts)
		if err != nil {
			return nil, err
		}
		return &SemaphoreCache[K]{c}, nil
	}
	derive := func(es []*CacheEntry[childKey[K], lockNodeData]) (SemaphoreState, []string) {
		leaseEs, lockEs := splitByDir(es, semaphoreLeasesDir), splitByDir(es, semaphoreLocksDir)
		leaseSt, _ := deriveLock(curatorLeases, leaseEs)
		return semaphoreState(leases, leaseSt.Holders, lockEs, curatorMutex)
	}
	c, err := newSubtreeCache(tmpl.Str("dir").Str("node"), tmpl.Len(), key, codec, derive, opts)
	if err != nil {
		return nil, err
	}
	return &SemaphoreCache[K]{c}, nil
}

// splitByDir returns copies of the entries whose names are below dir,
// named as their names below it.
func splitByDir[K comparable, D any](es []*CacheEntry[childKey[K], D], dir string) []*CacheEntry[childKey[K], D] {
	var out []*CacheEntry[childKey[K], D]
	for _, e := range es {
		if name, ok := strings.CutPrefix(e.Key.name, dir+"/"); ok {
			cp := *e
			cp.Key.name = name
			out = append(out, &cp)
		}
	}
	return out
}

// deriveKazooSemaphore derives a kazoo-layout semaphore's state: every
// child of its directory is a lease, in creation order (as holdersKazoo
// lists them); its sibling's nodes are the internal lock's.
func deriveKazooSemaphore[K comparable](es []*CacheEntry[childKey[K], lockNodeData], size int) (SemaphoreState, []string) {
	var leases []Holder
	for _, e := range es {
		if strings.Contains(e.Key.name, "/") {
			continue
		}
		leases = append(leases, Holder{Node: e.Path, Token: e.Stat.Czxid, Created: time.UnixMilli(e.Stat.Ctime).UTC(),
			Owner: e.Value.owner, Known: e.Value.known})
	}
	slices.SortFunc(leases, func(a, b Holder) int { return cmp.Compare(a.Token, b.Token) })
	return semaphoreState(size, leases, splitByDir(es, siblingMark), kazooMutex)
}

// semaphoreState splits the lease nodes (in lease order) into holders
// and waiters, then adds the internal lock's contenders (nodes of
// family fam) as Semaphore.Holders does. It returns the state and the
// paths of its nodes, holders first.
func semaphoreState[K comparable](size int, leases []Holder, lockEs []*CacheEntry[childKey[K], lockNodeData], fam *family) (SemaphoreState, []string) {
	st := SemaphoreState{Size: size}
	var shown []string
	for i, h := range leases {
		h.Holds = i < size
		if h.Holds {
			st.Holders = append(st.Holders, h)
		} else {
			st.Waiters = append(st.Waiters, h)
		}
		shown = append(shown, h.Node)
	}
	lockSt, _ := deriveLock(fam, lockEs)
	waiters := append(lockSt.Holders, lockSt.Waiters...)
	// The internal lock's holder is shown by its lease node once it has
	// one (Semaphore.Holders).
	if len(waiters) > 0 && len(leases) > size {
		waiters = waiters[1:]
	}
	for _, h := range waiters {
		h.Holds = false
		st.Waiters = append(st.Waiters, h)
		shown = append(shown, h.Node)
	}
	return st, shown
}
