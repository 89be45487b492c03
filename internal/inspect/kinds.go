package inspect

import (
	"context"
	"fmt"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// kindOps is what the live commands know of one kind. The kind's own file
// (lock.go, queue.go, ...) fills it in and registers it; Supported tells
// the coverage test (golden/coverage_test.go) which kinds lack it.
type kindOps struct {
	// read fills res's section for the kind with the live state of the
	// instance of r at p.
	read func(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error
	// provision says which persistent node zkgen provision creates for a
	// resource of the kind.
	provision provisionRule
	// locks opens the contender view of an instance, for the kinds whose
	// nodes zkgen reap breaks; nil for the others.
	locks func(sess *runtime.Session, r *spec.Resource, p runtime.Path) lockView
	// watch lists the nodes whose changes change what read shows, for
	// zkgen serve (Watches); the coverage test requires it of every kind
	// read supports.
	watch []watchRule
}

// provisionRule is what zkgen provision creates for a resource of one kind.
type provisionRule int

// The provisioning rules. The zero value is no rule: a kind registered
// without one fails the coverage test.
const (
	// provisionPath creates the resource's literal path up to its first
	// parameter: its whole path when it has none.
	provisionPath provisionRule = iota + 1
	// provisionParent is provisionPath, except that a path without
	// parameters stops at the parent: the node's own existence is state
	// (a barrier is up, a config value is set, a commit is proposed).
	provisionParent
	// provisionNothing creates nothing for the resource (its recipe creates
	// every node it needs).
	provisionNothing
)

// lockView is the contender view of one lock, rwlock or semaphore
// instance: holders then waiters.
type lockView struct {
	holders func(context.Context) ([]runtime.Holder, error)
	// reapable lists the nodes reap may remove, when that is more than
	// holders (a semaphore's internal lock); nil: holders.
	reapable func(context.Context) ([]runtime.Holder, error)
	leases   int  // a semaphore's lease count, else 0
	modes    bool // an rwlock: contenders are readers or writers
	// gate lists the contenders of a semaphore's internal lock, which a
	// participant holds while it takes a lease: one that holds it long
	// (a paused process) blocks every waiter. nil: no such lock.
	gate func(context.Context) ([]runtime.Holder, error)
}

// kinds holds the registered kinds.
var kinds = map[spec.Kind]kindOps{}

// register adds the live commands' knowledge of kind k; each kind's file
// calls it once.
func register(k spec.Kind, ops kindOps) {
	if _, dup := kinds[k]; dup {
		panic("inspect: kind " + string(k) + " registered twice")
	}
	kinds[k] = ops
}

// Supported reports whether zkgen inspect reads kind k and whether zkgen
// provision has a rule for it (provisionNothing counts as one).
func Supported(k spec.Kind) (inspects, provisions bool) {
	ops, ok := kinds[k]
	return ok && ops.read != nil, ok && ops.provision != 0
}

// read fills res with the state of the instance of r at path.
func read(ctx context.Context, sess *runtime.Session, r *spec.Resource, path string, res *Resource) error {
	ops, ok := kinds[r.Kind]
	if !ok || ops.read == nil {
		return fmt.Errorf("kind %s cannot be inspected", r.Kind)
	}
	return ops.read(ctx, sess, r, runtime.At(path), res)
}
