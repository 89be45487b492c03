package templates

import (
	"fmt"
	"slices"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindLock, lockDescriptor("Lock", "a contender for the exclusive lock", lockCache("NewLockCache",
		"the holder and the waiters of each instance that has a contender (runtime.LockState)"),
		"Hold it with [runtime.Lock.Lock] or [runtime.Lock.Do]; fence work with",
		"[runtime.Lock.Token] or [runtime.Lock.Guarded]."))
	register(spec.KindRWLock, lockDescriptor("RWLock", "the read/write lock", lockCache("NewRWLockCache",
		"the holders (readers, or one writer) and the waiters of each instance that has a contender (runtime.LockState)"),
		"Its sides are [runtime.RWLock.Read] and [runtime.RWLock.Write]."))
	register(spec.KindSemaphore, descriptor{
		cache: &cacheDesc{
			ctor: "NewSemaphoreCache",
			name: "SemaphoreCache",
			typ: func(_ *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "SemaphoreCache").Types(key)
			},
			args: func(r *spec.Resource) []jen.Code { return []jen.Code{jen.Lit(r.Leases), layoutArg(r)} },
			mirrors: func(*spec.Resource) string {
				return "the lease holders and the waiters of each instance that has either (runtime.SemaphoreState)"
			},
		},
		handle: func(*spec.Resource) (string, []jen.Code) { return "Semaphore", nil },
		args:   func(r *spec.Resource) []jen.Code { return append([]jen.Code{jen.Lit(r.Leases)}, layoutOption(r)...) },
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a participant in the semaphore %s at %s, which grants at most %d %s at once.",
				r.GoName, r.Name, layout(r), r.Leases, plural(r.Leases, "lease", "leases"))}
		},
		usage: func(r *spec.Resource) []string {
			var lines []string
			if r.Layout == spec.LayoutKazoo {
				lines = append(lines, "kazoo's Semaphore layout: the node records the number of leases, and a handle",
					"with another number is refused ([runtime.ErrSpecMismatch]).")
			}
			return lines
		},
	})
	register(spec.KindLease, descriptor{
		cache: &cacheDesc{
			ctor: "NewTTLLeaseCache",
			name: "TTLLeaseCache",
			typ: func(_ *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "TTLLeaseCache").Types(key)
			},
			args: func(r *spec.Resource) []jen.Code { return []jen.Code{jen.Lit(r.Leases), durationExpr(r.TTL)} },
			mirrors: func(*spec.Resource) string {
				return "the held slots of each instance that has one, each holder with its last renewal and expiry (runtime.TTLLeaseState)"
			},
		},
		handle: func(*spec.Resource) (string, []jen.Code) { return "TTLLeases", nil },
		args: func(r *spec.Resource) []jen.Code {
			return []jen.Code{jen.Lit(r.Leases), durationExpr(r.TTL)}
		},
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a handle on the lease set %s at %s: at most %d %s at once, each lasting %v unless renewed.",
				r.GoName, r.Name, layout(r), r.Leases, plural(r.Leases, "holder", "holders"), r.TTL)}
		},
		usage: func(*spec.Resource) []string {
			return []string{"The server must allow TTL nodes (zookeeper.extendedTypesEnabled)."}
		},
	})
}

// lockDescriptor describes a lock kind whose handle is runtime.<typ>: its
// method returns what (an article and a noun) and its doc explains usage,
// then the layout and revocation of the resource; cache is its cache.
func lockDescriptor(typ, what string, cache *cacheDesc, usage ...string) descriptor {
	return descriptor{
		cache:  cache,
		handle: func(*spec.Resource) (string, []jen.Code) { return typ, nil },
		args:   lockOptions,
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns %s %s at %s.", r.GoName, what, r.Name, layout(r))}
		},
		usage: func(r *spec.Resource) []string { return append(slices.Clone(usage), lockOptionsDoc(r)...) },
	}
}

// lockOptions returns the runtime options of a lock or rwlock resource.
func lockOptions(r *spec.Resource) []jen.Code {
	opts := layoutOption(r)
	if r.Revocable {
		opts = append(opts, jen.Qual(runtimePkg, "WithRevocation").Call(durationExpr(r.ForceAfter)))
	}
	return opts
}

// layoutOption returns runtime.WithLayout for a resource whose layout is
// not the default, else nothing.
func layoutOption(r *spec.Resource) []jen.Code {
	if l, ok := bind.LayoutOf(r); ok {
		return []jen.Code{jen.Qual(runtimePkg, "WithLayout").Call(jen.Qual(runtimePkg, l.Name))}
	}
	return nil
}

// lockOptionsDoc documents a lock's layout and revocation.
func lockOptionsDoc(r *spec.Resource) []string {
	var lines []string
	if r.Layout == spec.LayoutKazoo {
		lines = append(lines, "Nodes are named as Python's kazoo names them.")
	}
	switch {
	case r.Revocable && r.ForceAfter > 0:
		lines = append(lines, fmt.Sprintf("Revocable, forced after %v ([runtime.WithRevocation]).", r.ForceAfter))
	case r.Revocable:
		lines = append(lines, "Revocable, never forced ([runtime.WithRevocation]).")
	}
	return lines
}

// durationExpr renders d as readable Go: 0, 5 * time.Second, 1500 * time.Millisecond.
func durationExpr(d time.Duration) jen.Code {
	units := []struct {
		unit time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}}
	if d == 0 {
		return jen.Lit(0)
	}
	for _, u := range units {
		if d%u.unit == 0 {
			n := int64(d / u.unit)
			if n == 1 {
				return jen.Qual("time", u.name)
			}
			return jen.Lit(int(n)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Call(jen.Lit(int64(d)))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
