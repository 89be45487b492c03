package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Reaped is one contender node reap removed (or, in a dry run, would
// remove), or found gone when it came to remove it.
type Reaped struct {
	Name      string    // the resource's name in the spec
	Kind      string    // lock, rwlock or semaphore
	Contender Contender // the node, with its owner metadata and age
	// Vanished is set when the node was listed but had gone by the time
	// reap deleted it: its owner released it or its session ended.
	Vanished bool
}

// ReapOptions says which contender nodes Reap removes.
type ReapOptions struct {
	OlderThan time.Duration // only nodes created longer ago than this
	// Path, when set, is an absolute znode path: only nodes at or below it
	// (segment by segment: /locks/orders/7 is not below /locks/orders/70).
	Path   string
	DryRun bool // remove nothing; return what would be removed
}

// afterList, when set (by tests), runs after an instance's contenders are
// listed and before any is deleted.
var afterList func(dir string)

// Reap removes the contender nodes (holders and waiters; for semaphores
// leases and waiters) created more than o.OlderThan ago, below o.Path when
// set, of every instance of every lock, rwlock and semaphore resource of s,
// and returns them in spec order, with Vanished set on the nodes listed but
// gone when their delete came. A reaped holder's Lost fires. Ages compare
// the server's creation time with this machine's clock.
func Reap(ctx context.Context, sess *runtime.Session, s *spec.Spec, o ReapOptions) ([]Reaped, error) {
	var out []Reaped
	m, stop, err := Follow(ctx, sess, s)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := m.Sync(ctx); err != nil {
		return nil, err
	}
	now := time.Now()
	cutoff := now.Add(-o.OlderThan)
	for _, r := range s.Resources {
		open := kinds[r.Kind].locks
		if open == nil {
			continue
		}
		ins, err := m.Instances(r)
		if err != nil {
			return out, err
		}
		for _, in := range ins {
			if o.Path != "" && !related(in.Path, o.Path) {
				continue
			}
			v := open(sess, r, runtime.At(in.Path))
			list := v.holders
			if v.reapable != nil {
				list = v.reapable
			}
			all, err := list(ctx)
			if err != nil {
				return out, err
			}
			if afterList != nil {
				afterList(in.Path)
			}
			for _, h := range all {
				if !h.Created.Before(cutoff) || o.Path != "" && !under(h.Node, o.Path) {
					continue
				}
				c := v.contender(h)
				c.AgeSeconds = now.Sub(c.Created).Round(time.Millisecond).Seconds()
				rp := Reaped{Name: r.Name, Kind: string(r.Kind), Contender: c}
				if !o.DryRun {
					err := sess.Delete(ctx, h.Node)
					switch {
					case errors.Is(err, zk.ErrNoNode):
						rp.Vanished = true
					case err != nil:
						return out, fmt.Errorf("reap %s: %w", h.Node, err)
					}
				}
				out = append(out, rp)
			}
		}
	}
	return out, nil
}

// under reports whether p is prefix or below it.
func under(p, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// related reports whether one of a and b is at or below the other: an
// instance directory a holds nodes below prefix b.
func related(a, b string) bool { return under(a, b) || under(b, a) }

// ReapLine formats one reaped node for the reap command's output; verb is
// used unless the node had vanished.
func ReapLine(verb string, r Reaped) string {
	c := r.Contender
	owner := "(no owner metadata)"
	if c.Host != "" {
		owner = safe(c.Host) + " pid " + itoa(c.PID)
	}
	if r.Vanished {
		verb = "vanished"
	}
	line := verb + " " + c.Node + "  " + r.Name + " (" + r.Kind
	if c.Mode != "" {
		line += " " + c.Mode
	}
	line += ")  " + owner + "  age " + age(c.AgeSeconds)
	if c.Purpose != "" {
		line += "  " + quote(c.Purpose)
	}
	if r.Vanished {
		line += "  (gone before reap deleted it: released, or its session ended)"
	}
	return line
}
