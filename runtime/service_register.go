package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Services registers and finds the instances of services under one base
// path, in curator-x-discovery's layout (<base>/<name>/<id>, Curator's
// ServiceInstance JSON). It is not bound to a session: registrations are
// the process's, and Run holds them, and mirrors the base, on the session
// it is given; under Supervise (or a generated Run) call Run in the work
// function and each new session carries them on, with their current data.
//
// Protocol. Each registration is an ephemeral node written by one keeper
// goroutine per session: it creates the node, rewrites it when its data
// is not the registration's current data, waits for a node of another
// session with the same id to go (a process frozen past its session's
// end, or a second process with the same id) rather than delete it, and
// watches the node, so that a node an operator deleted is created again
// while the process lives. Methods are safe for concurrent use.
type Services[T any] struct {
	base  string
	err   error
	codec serviceCodec[T]
	acl   []zk.ACL
	cache *Cache[ServiceKey, ServiceInstance[T]]
	index *serviceIndex[T] // the cache's instances by service name
	only  string           // WithFindOnly's name; "": every service

	mu      sync.Mutex
	regs    map[ServiceKey]*serviceReg
	run     *serviceRun // the session Run holds registrations on; nil: none
	written chan struct{}
}

// serviceReg is one registration: its node and current data.
type serviceReg struct {
	key     ServiceKey
	path    string
	inst    any // the ServiceInstance[T] registered, as last updated
	data    []byte
	gen     uint64 // bumped by each Update
	written uint64 // the gen last found or written on a session
	removed bool
	kick    chan struct{} // wakes the keeper (1-buffered)
}

// serviceRun is a Run's session and its keepers.
type serviceRun struct {
	ctx     context.Context
	s       *Session
	keepers map[*serviceReg]chan struct{} // closed when the keeper returns
	wg      sync.WaitGroup
}

// ServicesOption configures NewServices.
type ServicesOption func(*servicesConfig)

type servicesConfig struct {
	javaClass string
	only      string
	acl       []zk.ACL
	cache     []CacheOption
}

// WithJavaClass makes registrations write the payload with Jackson's
// class property ("@class": class), as Curator's JsonInstanceSerializer
// with that payload class writes it: a Curator reader typed with a
// payload class leaves out an instance without it. Default: none (a
// Curator reader whose payload class is Map or Object reads it).
func WithJavaClass(class string) ServicesOption {
	return func(c *servicesConfig) { c.javaClass = class }
}

// WithServiceACL sets the ACL of the nodes registrations create (the
// session's default when not given).
func WithServiceACL(acl ...zk.ACL) ServicesOption {
	return func(c *servicesConfig) { c.acl = acl }
}

// WithServiceCache passes options to the cache of the base
// (WithMaxNodes, WithOneShotWatches).
func WithServiceCache(opts ...CacheOption) ServicesOption {
	return func(c *servicesConfig) { c.cache = append(c.cache, opts...) }
}

// WithFindOnly makes the finding side mirror the service name alone:
// the cache is of <base>/<name> (Cache's template), so the process holds
// no instance of another service under the base. Instances, Provider and
// Changes of another name get ErrServiceNotMirrored (Changes: a channel
// closed at once); registering works for every name. Default: every
// service under the base is mirrored. A name that is not one node name
// makes every method return ErrServiceInvalid.
func WithFindOnly(name string) ServicesOption {
	return func(c *servicesConfig) { c.only = name }
}

// NewServices returns the services under base. It does no I/O: nothing
// is written or read before Run. If base is invalid, every method
// returns its error.
func NewServices[T any](base Path, opts ...ServicesOption) *Services[T] {
	var cfg servicesConfig
	for _, o := range opts {
		o(&cfg)
	}
	d := &Services[T]{base: base.String(), err: base.Err(), codec: serviceCodec[T]{javaClass: cfg.javaClass},
		acl: cfg.acl, regs: map[ServiceKey]*serviceReg{}, written: make(chan struct{}), index: newServiceIndex[T](),
		only: cfg.only}
	if d.err != nil {
		return d
	}
	tmpl, key := TemplateAt(d.base).Str("name").Str("id"), func(p Params) ServiceKey {
		return ServiceKey{p.Str(0), p.Str(1)}
	}
	if cfg.only != "" {
		if err := CheckParam(ParamString, cfg.only); err != nil {
			d.err = fmt.Errorf("%w: %w", ErrServiceInvalid, err)
			return d
		}
		tmpl, key = TemplateAt(d.base+"/"+cfg.only).Str("id"), func(p Params) ServiceKey {
			return ServiceKey{cfg.only, p.Str(0)}
		}
	}
	d.cache, d.err = NewCache(tmpl, key, Codec[ServiceInstance[T]](d.codec), cfg.cache...)
	if d.err == nil {
		d.cache.observe(d.index.applied)
	}
	return d
}

// Base returns the base path: each service is a child of it.
func (d *Services[T]) Base() string { return d.base }

// Cache returns the cache that Instances, providers and Changes read:
// every instance of every service under the base, or with WithFindOnly
// every instance of that service.
func (d *Services[T]) Cache() *Cache[ServiceKey, ServiceInstance[T]] { return d.cache }

// Register registers inst, as Curator's registerService does: an
// ephemeral node <base>/<name>/<id> holding inst. An empty ID is given a
// random UUID, a zero Registered the current time, an empty Type
// DYNAMIC; the instance as registered is returned. The registration is
// the process's: it stays until Unregister, through sessions (see
// Services), with the data of the last Update.
//
// It blocks until the node is written on a session of Run (with no Run,
// until one starts). If ctx ends first, it returns ctx's error and the
// registration is withdrawn, its node deleted if it was written.
func (d *Services[T]) Register(ctx context.Context, inst ServiceInstance[T]) (ServiceInstance[T], error) {
	if d.err != nil {
		return inst, d.err
	}
	inst = fillInstance(inst)
	r, err := d.newReg(inst)
	if err != nil {
		return inst, err
	}
	if err := d.add(r); err != nil {
		return inst, err
	}
	if err := d.awaitWritten(ctx, r, 1); err != nil {
		rctx, cancel := releaseCtx(ctx)
		defer cancel()
		_ = d.unregister(rctx, r.key)
		return inst, err
	}
	return inst, nil
}

// fillInstance gives inst its defaults (see Register).
func fillInstance[T any](inst ServiceInstance[T]) ServiceInstance[T] {
	if inst.ID == "" {
		// A registration belongs to the process, not to a session: its id
		// is not drawn from a session's seed (a nil Rand: crypto/rand).
		inst.ID = (*client.Rand)(nil).NewGUID()
	}
	if inst.Registered.IsZero() {
		inst.Registered = time.Now()
	}
	inst.Registered = inst.Registered.Truncate(time.Millisecond).UTC()
	if inst.Type == "" {
		inst.Type = ServiceDynamic
	}
	return inst
}

// newReg checks and encodes inst as a registration.
func (d *Services[T]) newReg(inst ServiceInstance[T]) (*serviceReg, error) {
	if inst.Type != ServiceDynamic {
		return nil, fmt.Errorf("%w: type %s (only DYNAMIC is registered)", ErrServiceInvalid, inst.Type)
	}
	for _, seg := range []string{inst.Name, inst.ID} {
		if err := CheckParam(ParamString, seg); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrServiceInvalid, err)
		}
	}
	data, err := d.codec.Encode(inst)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: encoding: %w", inst.Name, inst.ID, err)
	}
	return &serviceReg{key: ServiceKey{inst.Name, inst.ID}, path: d.base + "/" + inst.Name + "/" + inst.ID,
		inst: inst, data: data, gen: 1, kick: make(chan struct{}, 1)}, nil
}

// add records r and starts its keeper if Run holds a session.
func (d *Services[T]) add(r *serviceReg) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.regs[r.key] != nil {
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, r.path)
	}
	d.regs[r.key] = r
	if d.run != nil {
		d.startKeeperLocked(r)
	}
	return nil
}

// Update replaces the data of the registration of inst's name and ID
// with inst (a zero Registered keeps the registration's time), as
// Curator's updateService does. It blocks until the new data is written
// on a session of Run. If ctx ends first, it returns ctx's error and the
// new data stays the registration's: it is written when a session
// allows, and on every later session.
func (d *Services[T]) Update(ctx context.Context, inst ServiceInstance[T]) error {
	if d.err != nil {
		return d.err
	}
	d.mu.Lock()
	r := d.regs[ServiceKey{inst.Name, inst.ID}]
	if r == nil {
		d.mu.Unlock()
		return fmt.Errorf("%w: %s/%s/%s", ErrNotRegistered, d.base, inst.Name, inst.ID)
	}
	if inst.Registered.IsZero() {
		inst.Registered = r.inst.(ServiceInstance[T]).Registered
	}
	inst = fillInstance(inst)
	d.mu.Unlock()
	data, err := d.codec.Encode(inst)
	if err != nil {
		return fmt.Errorf("service %s: encoding: %w", r.path, err)
	}
	d.mu.Lock()
	r.inst, r.data, r.gen = inst, data, r.gen+1
	gen := r.gen
	d.mu.Unlock()
	wake(r.kick)
	return d.awaitWritten(ctx, r, gen)
}

// Unregister withdraws the registration of name and id: its keeper stops
// and its node, if the current session holds it, is deleted. It blocks
// for the delete; if ctx ends first, the registration is withdrawn all
// the same and its node goes at the latest with its session.
func (d *Services[T]) Unregister(ctx context.Context, name, id string) error {
	if d.err != nil {
		return d.err
	}
	return d.unregister(ctx, ServiceKey{name, id})
}

func (d *Services[T]) unregister(ctx context.Context, key ServiceKey) error {
	d.mu.Lock()
	r := d.regs[key]
	if r == nil {
		d.mu.Unlock()
		return fmt.Errorf("%w: %s/%s/%s", ErrNotRegistered, d.base, key.Name, key.ID)
	}
	delete(d.regs, key)
	r.removed = true
	run := d.run
	var done chan struct{}
	if run != nil {
		done = run.keepers[r]
	}
	d.mu.Unlock()
	if run == nil {
		return nil
	}
	wake(r.kick)
	<-done
	return deleteOwn(ctx, run.s, r.path)
}

// deleteOwn deletes path if it is an ephemeral node of s.
func deleteOwn(ctx context.Context, s *Session, path string) error {
	_, st, err := opsOf(s).Get(ctx, path)
	if client.IsNoNode(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.EphemeralOwner != s.ID() {
		return nil
	}
	if err := opsOf(s).DeleteOwned(ctx, path); !client.IsNoNode(err) {
		return err
	}
	return nil
}

// awaitWritten waits until generation gen of r has been written.
func (d *Services[T]) awaitWritten(ctx context.Context, r *serviceReg, gen uint64) error {
	for {
		d.mu.Lock()
		done, removed, ch := r.written >= gen, r.removed, d.written
		d.mu.Unlock()
		switch {
		case done:
			return nil
		case removed:
			return fmt.Errorf("%w: %s", ErrNotRegistered, r.path)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wake wakes a keeper without blocking.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
