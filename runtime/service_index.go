package runtime

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// serviceIndex holds a Services cache's instances by service name, kept
// from the cache's changes as it applies them (Cache.observe), so that a
// change of one service's instance touches that service's list alone and
// a lookup reads one service, not the whole cache.
type serviceIndex[T any] struct {
	mu    sync.Mutex
	names map[string]*serviceList[T]
}

// serviceList is one service's entries by id, and the lists built from
// them since they last changed (nil: to build on the next read). A list
// once built is never changed: readers share it.
type serviceList[T any] struct {
	byID    map[string]*CacheEntry[ServiceKey, ServiceInstance[T]]
	built   bool
	all     []ServiceInstance[T] // the decoded instances, in id order
	enabled []ServiceInstance[T] // those of all not disabled
}

func newServiceIndex[T any]() *serviceIndex[T] {
	return &serviceIndex[T]{names: map[string]*serviceList[T]{}}
}

// applied records that old became cur (either nil); the cache calls it
// under its lock, so it takes only the index's.
func (x *serviceIndex[T]) applied(old, cur *CacheEntry[ServiceKey, ServiceInstance[T]]) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil {
		if l := x.names[old.Key.Name]; l != nil {
			delete(l.byID, old.Key.ID)
			l.built, l.all, l.enabled = false, nil, nil
			if len(l.byID) == 0 {
				delete(x.names, old.Key.Name)
			}
		}
	}
	if cur != nil {
		l := x.names[cur.Key.Name]
		if l == nil {
			l = &serviceList[T]{byID: map[string]*CacheEntry[ServiceKey, ServiceInstance[T]]{}}
			x.names[cur.Key.Name] = l
		}
		l.byID[cur.Key.ID] = cur
		l.built, l.all, l.enabled = false, nil, nil
	}
}

// lists returns service name's decoded and enabled instances, in id
// order, building them if the service changed since they were built.
// They are shared: callers must not change them.
func (x *serviceIndex[T]) lists(name string) (all, enabled []ServiceInstance[T]) {
	x.mu.Lock()
	defer x.mu.Unlock()
	l := x.names[name]
	if l == nil {
		return nil, nil
	}
	if !l.built {
		l.all = make([]ServiceInstance[T], 0, len(l.byID))
		for _, e := range l.byID {
			if e.Err == nil {
				l.all = append(l.all, e.Value)
			}
		}
		slices.SortFunc(l.all, func(a, b ServiceInstance[T]) int { return strings.Compare(a.ID, b.ID) })
		disabled := func(in ServiceInstance[T]) bool { return in.Disabled }
		l.enabled = l.all
		if slices.ContainsFunc(l.all, disabled) {
			l.enabled = slices.DeleteFunc(slices.Clone(l.all), disabled)
		}
		l.built = true
	}
	return l.all, l.enabled
}

// serviceNames returns the names of the services with an entry, sorted.
func (x *serviceIndex[T]) serviceNames() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Sorted(maps.Keys(x.names))
}
