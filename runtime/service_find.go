package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Instances returns the instances of the service name, in id order, as
// ZooKeeper holds them when the call is made: it waits until the cache
// reflects every change made before the call (Cache.Sync; with no Run,
// until one runs), or ctx ends (then it returns ctx's error). Instances
// whose data does not decode are left out (the cache holds them with
// their error). It reads the service's own list, kept by name as the
// cache changes: its cost does not grow with the other services under
// the base. With WithFindOnly, a name other than the one mirrored gets
// ErrServiceNotMirrored. It writes nothing.
func (d *Services[T]) Instances(ctx context.Context, name string) ([]ServiceInstance[T], error) {
	if err := d.mirrors(name); err != nil {
		return nil, err
	}
	if err := d.cache.Sync(ctx); err != nil {
		return nil, err
	}
	all, _ := d.index.lists(name)
	return slices.Clone(all), d.cache.Err()
}

// mirrors returns why the cache does not mirror service name, or nil.
func (d *Services[T]) mirrors(name string) error {
	switch {
	case d.err != nil:
		return d.err
	case d.only != "" && name != d.only:
		return fmt.Errorf("%w: %s (only %s is)", ErrServiceNotMirrored, name, d.only)
	}
	return nil
}

// Names returns the names of the services with at least one instance,
// sorted, after a Sync of the cache (as Instances). With WithFindOnly,
// it is the mirrored service's name, or none.
func (d *Services[T]) Names(ctx context.Context) ([]string, error) {
	if d.err != nil {
		return nil, d.err
	}
	if err := d.cache.Sync(ctx); err != nil {
		return nil, err
	}
	return d.index.serviceNames(), d.cache.Err()
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
	if d.mirrors(name) != nil {
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
// Instances to wait for a sync). The service's list is kept until its
// instances change: with nothing reported down a lookup copies nothing,
// and the first lookup after a change of the service builds its list
// again from its own instances (changes of other services leave it).
// With WithFindOnly, a provider of another name gets
// ErrServiceNotMirrored.
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
	all, err := p.d.enabled(p.name)
	if all == nil {
		return nil, err
	}
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

// enabled returns the enabled instances of service name, in id order,
// from the cache's index (no I/O). The list is kept until the service's
// instances change, so that a provider's lookup does not copy and sort
// them each time; it is shared: callers must not change it.
func (d *Services[T]) enabled(name string) ([]ServiceInstance[T], error) {
	if err := d.mirrors(name); err != nil {
		return nil, err
	}
	_, on := d.index.lists(name)
	return on, d.cache.Err()
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
