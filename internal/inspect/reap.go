package inspect

import (
	"context"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Reaped is one contender node reap removed (or, in a dry run, would
// remove).
type Reaped struct {
	Name      string    // the resource's name in the spec
	Kind      string    // lock, rwlock or semaphore
	Contender Contender // the node, with its owner metadata and age
}

// Reap removes the contender nodes (holders and waiters; for semaphores
// leases and waiters) created more than olderThan ago of every instance of
// every lock, rwlock and semaphore resource of s, and returns them in spec
// order. With dryRun it removes nothing and returns what it would remove.
// A reaped holder's Lost fires. Ages compare the server's creation time with
// this machine's clock.
func Reap(ctx context.Context, sess *runtime.Session, s *spec.Spec, olderThan time.Duration, dryRun bool) ([]Reaped, error) {
	var out []Reaped
	now := time.Now()
	for _, r := range s.Resources {
		if r.Kind != spec.KindLock && r.Kind != spec.KindRWLock && r.Kind != spec.KindSemaphore {
			continue
		}
		ins, err := Expand(ctx, sess, r)
		if err != nil {
			return out, err
		}
		for _, in := range ins {
			p := runtime.At(in.Path)
			var holders func(context.Context) ([]runtime.Holder, error)
			var reap func(context.Context, time.Duration) ([]runtime.Holder, error)
			switch r.Kind {
			case spec.KindLock:
				l := runtime.NewLock(sess, p, lockOptions(r)...)
				holders, reap = l.Holders, l.Reap
			case spec.KindRWLock:
				l := runtime.NewRWLock(sess, p, lockOptions(r)...).Write()
				holders, reap = l.Holders, l.Reap
			default:
				m := runtime.NewSemaphore(sess, p, r.Leases)
				holders, reap = m.Holders, m.Reap
			}
			var hs []runtime.Holder
			if dryRun {
				all, err := holders(ctx)
				if err != nil {
					return out, err
				}
				cutoff := now.Add(-olderThan)
				for _, h := range all {
					if h.Created.Before(cutoff) {
						hs = append(hs, h)
					}
				}
			} else if hs, err = reap(ctx, olderThan); err != nil {
				return append(out, reaped(r, hs, now)...), err
			}
			out = append(out, reaped(r, hs, now)...)
		}
	}
	return out, nil
}

func reaped(r *spec.Resource, hs []runtime.Holder, now time.Time) []Reaped {
	var out []Reaped
	for _, h := range hs {
		c := contender(h)
		if r.Kind == spec.KindRWLock {
			c.Mode = "write"
			if h.Read {
				c.Mode = "read"
			}
		}
		c.AgeSeconds = now.Sub(c.Created).Round(time.Millisecond).Seconds()
		out = append(out, Reaped{Name: r.Name, Kind: string(r.Kind), Contender: c})
	}
	return out
}

// ReapLine formats one reaped node for the reap command's output.
func ReapLine(verb string, r Reaped) string {
	c := r.Contender
	owner := "(no owner metadata)"
	if c.Host != "" {
		owner = safe(c.Host) + " pid " + itoa(c.PID)
	}
	line := verb + " " + c.Node + "  " + r.Name + " (" + r.Kind
	if c.Mode != "" {
		line += " " + c.Mode
	}
	line += ")  " + owner + "  age " + age(c.AgeSeconds)
	if c.Purpose != "" {
		line += "  " + quote(c.Purpose)
	}
	return line
}
