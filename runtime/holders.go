package runtime

import (
	"fmt"
	"slices"
	"sync"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Handles made per call
//
// A generated Client returns a new handle at each call, so what one
// handle took must be answerable through the next: c.OrderLock(7).Lock in
// one place and c.OrderLock(7).Unlock in another, c.Shards().Stay in main
// and c.Shards().Owns(i) in a hook. The session keeps, per resource, the
// handles that hold a tenure on it now: a lock's holders (per side), a
// semaphore's, a double barrier's entered participants, a partitioner's
// members, and the two-phase commits it proposed and has not seen
// decided. A handle that has never taken a tenure itself (what an accessor
// just returned) answers for them; one that has answers for its own, as
// before. An entry lives from the acquisition to the release (Unlock,
// Release, Leave, the membership's end, the decision), so the registry
// holds no more than the session's tenures: a resource with unbounded
// parameters (a lock per order id) costs nothing once released.
//
// Handles are not returned again per parameters instead: two goroutines
// each calling c.OrderLock(7).Lock must stay two contenders that exclude
// each other, and a cache per parameter value would grow with every value
// ever used.

// holders is the session's registry of the handles holding a tenure, per
// resource. A resource key is a comparable value of a type of the
// recipe's own, naming the kind of tenure and the directory (lockHeld,
// semHeld, barrierHeld, partitionerHeld, txProposed).
type holders struct {
	mu sync.Mutex
	m  map[any][]any // resource key -> holding handles, in acquisition order
}

type holdersKey struct{}

func holdersOf(s *Session) *holders {
	return client.Shared(s, holdersKey{}, func() *holders { return &holders{m: map[any][]any{}} })
}

// add records that h holds a tenure on the resource key.
func (r *holders) add(key, h any) {
	r.mu.Lock()
	r.m[key] = append(r.m[key], h)
	r.mu.Unlock()
}

// remove forgets h as a holder of key; the key goes with its last holder.
func (r *holders) remove(key, h any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs := slices.DeleteFunc(r.m[key], func(x any) bool { return x == h })
	if len(hs) == 0 {
		delete(r.m, key)
		return
	}
	r.m[key] = hs
}

// drop forgets every holder of key.
func (r *holders) drop(key any) {
	r.mu.Lock()
	delete(r.m, key)
	r.mu.Unlock()
}

// heldBy returns the holders of key of type H, in acquisition order.
func heldBy[H any](s *Session, key any) []H {
	r := holdersOf(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []H
	for _, x := range r.m[key] {
		if h, ok := x.(H); ok {
			out = append(out, h)
		}
	}
	return out
}

// answering returns the handle that answers for self: self, unless self
// is fresh (it has never taken, nor tried to take, a tenure); then the one
// handle of its session that holds key, if exactly one does. n says how
// many do (0 when self is not fresh).
func answering[H comparable](self H, fresh bool, s *Session, key any) (a H, n int) {
	if !fresh {
		return self, 0
	}
	hs := heldBy[H](s, key)
	if len(hs) != 1 {
		return self, len(hs)
	}
	return hs[0], 1
}

// actAs runs act on the handle that answers for self (see answering). A
// fresh handle of a resource that several handles of its session hold
// cannot tell which one is meant: it gets an error wrapping ErrNotHeld
// (what and dir name the resource) and act does not run.
func actAs[H comparable](self H, fresh bool, s *Session, key any, what, dir string, act func(H) error) error {
	a, n := answering(self, fresh, s, key)
	if n > 1 {
		return errSeveral(what, dir, n, ErrNotHeld)
	}
	return act(a)
}

// errSeveral is the error of a fresh handle asked to act for a resource
// that several handles of its session hold: it cannot tell which one.
func errSeveral(what, dir string, n int, sentinel error) error {
	return fmt.Errorf("%s %s: %w by this handle, and %d handles of this session hold it: call the one that took it", what, dir, sentinel, n)
}
