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
		open := kinds[r.Kind].locks
		if open == nil {
			continue
		}
		ins, err := Expand(ctx, sess, r)
		if err != nil {
			return out, err
		}
		for _, in := range ins {
			v := open(sess, r, runtime.At(in.Path))
			hs, err := reapOne(ctx, v, olderThan, now, dryRun)
			out = append(out, reaped(r, v, hs, now)...)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// reapOne removes (dryRun: lists) the contenders of one instance created
// before now-olderThan.
func reapOne(ctx context.Context, v lockView, olderThan time.Duration, now time.Time, dryRun bool) ([]runtime.Holder, error) {
	if !dryRun {
		return v.reap(ctx, olderThan)
	}
	all, err := v.holders(ctx)
	if err != nil {
		return nil, err
	}
	var hs []runtime.Holder
	cutoff := now.Add(-olderThan)
	for _, h := range all {
		if h.Created.Before(cutoff) {
			hs = append(hs, h)
		}
	}
	return hs, nil
}

func reaped(r *spec.Resource, v lockView, hs []runtime.Holder, now time.Time) []Reaped {
	var out []Reaped
	for _, h := range hs {
		c := v.contender(h)
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
