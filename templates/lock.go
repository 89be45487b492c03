package templates

import (
	"fmt"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitLock emits the client method of an exclusive lock.
func emitLock(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a contender for the exclusive lock %s at %s.", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Lock blocks until this contender holds the lock (ctx cancellation removes its node);")
	f.Comment("Unlock releases it; Lost and Context end if it is lost; Token is its fencing token;")
	f.Comment("Guarded runs ZooKeeper writes only while the lock is held.")
	lockOptionsDoc(f, r)
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewLock", append([]jen.Code{jen.Id("c").Dot("sess"), pathExpr(r)}, lockOptions(r)...)...))
}

// emitRWLock emits the client method of a read/write lock.
func emitRWLock(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns the read/write lock %s at %s.", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Read and Write each return a new contender with the lock methods: readers share")
	f.Comment("the lock, a writer excludes everyone, and readers arriving after a waiting writer")
	f.Comment("queue behind it.")
	lockOptionsDoc(f, r)
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewRWLock", append([]jen.Code{jen.Id("c").Dot("sess"), pathExpr(r)}, lockOptions(r)...)...))
}

// emitSemaphore emits the client method of a counting semaphore.
func emitSemaphore(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a participant in the semaphore %s at %s, which grants at most %d %s at once.",
		r.GoName, r.Name, layout(r), r.Leases, plural(r.Leases, "lease", "leases")))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Acquire blocks until a lease is granted and returns it; Release gives it back.")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewSemaphore", jen.Id("c").Dot("sess"), pathExpr(r), jen.Lit(r.Leases)))
}

// lockOptions returns the runtime options of a lock or rwlock resource.
func lockOptions(r *spec.Resource) []jen.Code {
	var opts []jen.Code
	if r.Layout == "kazoo" {
		opts = append(opts, jen.Qual(runtimePkg, "WithLayout").Call(jen.Qual(runtimePkg, "LayoutKazoo")))
	}
	if r.Revocable {
		opts = append(opts, jen.Qual(runtimePkg, "WithRevocation").Call(durationExpr(r.ForceAfter)))
	}
	return opts
}

func lockOptionsDoc(f *jen.File, r *spec.Resource) {
	if r.Layout == "kazoo" {
		f.Comment("Nodes are named as Python's kazoo names them.")
	}
	switch {
	case r.Revocable && r.ForceAfter > 0:
		f.Comment(fmt.Sprintf("Revocable: RequestRevoke asks the holder to release (its Revoked closes) and, after %v", r.ForceAfter))
		f.Comment("without release, deletes the holder's node (its Lost fires).")
	case r.Revocable:
		f.Comment("Revocable: RequestRevoke asks the holder to release (its Revoked closes).")
	}
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
