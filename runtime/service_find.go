package runtime

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Instances returns the instances of the service name, in id order, as
// ZooKeeper holds them when the call is made: it waits until the cache
// reflects every change made before the call (Cache.Sync; with no Run,
// until one runs), or ctx ends (then it returns ctx's error). Instances
// whose data does not decode are left out (the cache holds them with
// their error). It writes nothing.
func (d *Services[T]) Instances(ctx context.Context, name string) ([]ServiceInstance[T], error) {
	if d.err != nil {
		return nil, d.err
	}
	if err := d.cache.Sync(ctx); err != nil {
		return nil, err
	}
	return d.held(name)
}

// held returns the instances of name the cache holds now.
func (d *Services[T]) held(name string) ([]ServiceInstance[T], error) {
	snap, err := d.cache.Snapshot()
	var out []ServiceInstance[T]
	for _, e := range snap.Entries {
		if e.Key.Name == name && e.Err == nil {
			out = append(out, e.Value)
		}
	}
	slices.SortFunc(out, func(a, b ServiceInstance[T]) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

// Names returns the names of the services with at least one instance,
// sorted, after a Sync of the cache (as Instances).
func (d *Services[T]) Names(ctx context.Context) ([]string, error) {
	if d.err != nil {
		return nil, d.err
	}
	if err := d.cache.Sync(ctx); err != nil {
		return nil, err
	}
	snap, err := d.cache.Snapshot()
	var names []string
	for _, e := range snap.Entries {
		names = append(names, e.Key.Name)
	}
	slices.Sort(names)
	return slices.Compact(names), err
}

// ServiceEvent is a change of a service's instances (Changes).
type ServiceEvent[T any] struct {
	// Kind is CacheAdded, CacheChanged or CacheRemoved for an instance;
	// CacheGap, CacheSynced and CacheFailed are the cache's, for every
	// service (see Cache.Events).
	Kind     CacheEventKind
	Instance ServiceInstance[T] // the instance as now (as last held for Removed)
	Err      error              // why the instance's data does not decode
}

// Changes streams the changes of the instances of service name, from the
// cache: first an Added event per instance held, then each change, with
// the cache's gaps and resyncs (the semantics of Cache.Events: a slow
// reader gets the net change per instance, nothing is dropped silently).
// The channel closes when ctx ends or the cache stops; it blocks nothing.
func (d *Services[T]) Changes(ctx context.Context, name string) <-chan ServiceEvent[T] {
	out := make(chan ServiceEvent[T])
	if d.err != nil {
		close(out)
		return out
	}
	in := d.cache.Events(ctx)
	go func() {
		defer close(out)
		for ev := range in {
			switch ev.Kind {
			case CacheAdded, CacheChanged, CacheRemoved:
				if ev.Key.Name != name {
					continue
				}
			}
			select {
			case out <- ServiceEvent[T]{Kind: ev.Kind, Instance: ev.Value, Err: ev.Err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// ProviderStrategy is how a provider chooses among the instances.
type ProviderStrategy uint8

// The strategies of Curator's ServiceProvider.
const (
	// RoundRobin gives the instances in turn, in id order.
	RoundRobin ProviderStrategy = iota
	// Random gives an instance chosen at random.
	Random
	// Sticky gives the same instance for as long as it is available,
	// then another (chosen round-robin).
	Sticky
)

// DefaultDownFor is how long an instance reported down is left out
// unless WithDownFor says otherwise (Curator's default, 30s).
const DefaultDownFor = 30 * time.Second

// ServiceProvider gives instances of one service from the cache of a
// Services value, without I/O: each call reads memory. It leaves out
// disabled instances and those reported down in the last down period.
// Safe for concurrent use.
type ServiceProvider[T any] struct {
	d        *Services[T]
	name     string
	strategy ProviderStrategy
	downFor  time.Duration

	mu     sync.Mutex
	next   int
	sticky string
	down   map[string]time.Time // id: until when it is left out
}

// Provider returns a provider of the instances of service name with
// strategy (RoundRobin, Random, Sticky). downFor is how long an instance
// reported down is left out (DefaultDownFor when 0). It does no I/O;
// its instances are those the cache holds, so it needs a Run.
func (d *Services[T]) Provider(name string, strategy ProviderStrategy, downFor time.Duration) *ServiceProvider[T] {
	if downFor <= 0 {
		downFor = DefaultDownFor
	}
	return &ServiceProvider[T]{d: d, name: name, strategy: strategy, downFor: downFor, down: map[string]time.Time{}}
}

// Instance returns an instance chosen by the provider's strategy among
// the available ones (registered, enabled, not reported down), or
// ErrNoInstance. It does not block: it reads the cache as it is (see
// Instances to wait for a sync). The service's list is kept until the
// cache changes: with nothing reported down a lookup copies nothing, and
// the first lookup after a change builds the list again from the whole
// cache.
func (p *ServiceProvider[T]) Instance() (ServiceInstance[T], error) {
	all, err := p.available()
	if err != nil {
		return ServiceInstance[T]{}, err
	}
	if len(all) == 0 {
		return ServiceInstance[T]{}, ErrNoInstance
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.strategy {
	case Random:
		return all[rand.IntN(len(all))], nil
	case Sticky:
		if i := slices.IndexFunc(all, func(in ServiceInstance[T]) bool { return in.ID == p.sticky }); i >= 0 {
			return all[i], nil
		}
	}
	in := all[p.next%len(all)]
	p.next++
	p.sticky = in.ID
	return in, nil
}

// Available returns the instances the provider may give now, in id
// order, from the cache (no I/O).
func (p *ServiceProvider[T]) Available() ([]ServiceInstance[T], error) {
	all, err := p.available()
	return slices.Clone(all), err
}

// available is Available without the copy: with nothing reported down
// it is the service's shared list (read only).
func (p *ServiceProvider[T]) available() ([]ServiceInstance[T], error) {
	if p.d.err != nil {
		return nil, p.d.err
	}
	all, err := p.d.enabled(p.name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.down) == 0 {
		return all, err
	}
	now := time.Now()
	return slices.DeleteFunc(slices.Clone(all), func(in ServiceInstance[T]) bool {
		until, down := p.down[in.ID]
		if down && !now.Before(until) {
			delete(p.down, in.ID)
			down = false
		}
		return down
	}), err
}

// serviceView is the enabled instances of one service, in id order, as
// the cache held them at its generation gen.
type serviceView[T any] struct {
	gen     uint64
	enabled []ServiceInstance[T]
}

// enabled returns the enabled instances of service name, in id order,
// from the cache (no I/O). The list is kept until the cache changes, so
// that a provider's lookup does not copy and sort the cache each time;
// it is shared: callers must not change it.
func (d *Services[T]) enabled(name string) ([]ServiceInstance[T], error) {
	gen, err := d.cache.changes()
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	if v := d.views[name]; v != nil && v.gen == gen {
		return v.enabled, err
	}
	// Read after gen: the list is at least as new as gen says, and a
	// change in between bumps the generation past it.
	all, err := d.held(name)
	all = slices.DeleteFunc(all, func(in ServiceInstance[T]) bool { return in.Disabled })
	d.views[name] = &serviceView[T]{gen: gen, enabled: all}
	return all, err
}

// ReportDown leaves the instance with id out of this provider for its
// down period (Curator's noteError, at the first error). Other providers
// and ZooKeeper are not told.
func (p *ServiceProvider[T]) ReportDown(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down[id] = time.Now().Add(p.downFor)
	if p.sticky == id {
		p.sticky = ""
	}
}
