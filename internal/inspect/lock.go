package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindLock, kindOps{read: readLock, provision: provisionPath, watch: []watchRule{kids("")},
		locks: func(sess *runtime.Session, r *spec.Resource, p runtime.Path) lockView {
			l := runtime.NewLock(sess, p, bind.LockOptions(r)...)
			return lockView{holders: l.Holders}
		}})
	register(spec.KindRWLock, kindOps{read: readLock, provision: provisionPath, watch: []watchRule{kids("")},
		locks: func(sess *runtime.Session, r *spec.Resource, p runtime.Path) lockView {
			l := runtime.NewRWLock(sess, p, bind.LockOptions(r)...).Write()
			return lockView{holders: l.Holders, modes: true}
		}})
	register(spec.KindSemaphore, kindOps{read: readLock, provision: provisionPath, watch: semaphoreWatches(),
		locks: func(sess *runtime.Session, r *spec.Resource, p runtime.Path) lockView {
			m := runtime.NewSemaphore(sess, p, r.Leases, bind.HandleOptions(r)...)
			return lockView{holders: m.Holders, leases: r.Leases, gate: m.LockHolders, reapable: func(ctx context.Context) ([]runtime.Holder, error) {
				return union(ctx, m.Holders, m.LockHolders)
			}}
		}})
}

// LockState lists a lock's holders and waiters in queue order (for a
// semaphore: the lease holders, then the waiters).
type LockState struct {
	Leases  int         `json:"leases,omitempty"` // semaphore: the spec's lease count
	Holders []Contender `json:"holders"`
	Waiters []Contender `json:"waiters"`
	// Gate is, for a semaphore, the holder of its internal lock: the
	// participant taking a lease now, which every waiter waits behind
	// while it holds it (a paused process that holds it blocks them all).
	Gate *Contender `json:"gate,omitempty"`
}

// Contender is one lock, lease, participant or candidate node.
type Contender struct {
	Node       string    `json:"node"`                       // full znode path
	Seq        int32     `json:"seq"`                        // sequence number
	Mode       string    `json:"mode,omitempty"`             // rwlock: "read" or "write"
	Host       string    `json:"host,omitempty"`             // owner metadata (absent for nodes of other libraries)
	PID        int       `json:"pid,omitempty"`              //
	Session    string    `json:"session,omitempty"`          //
	Purpose    string    `json:"purpose,omitempty"`          //
	Created    time.Time `json:"created"`                    // node creation (server clock)
	AgeSeconds float64   `json:"age_seconds"`                // Taken - Created: how long it has held or waited
	Revoke     bool      `json:"revoke_requested,omitempty"` // someone asked the holder to release
}

// readLock reads the holders and waiters of a lock, rwlock or semaphore.
func readLock(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	v := kinds[r.Kind].locks(sess, r, p)
	hs, err := v.holders(ctx)
	if err != nil {
		return err
	}
	st := &LockState{Leases: v.leases, Holders: []Contender{}, Waiters: []Contender{}}
	for _, h := range hs {
		c := v.contender(h)
		if h.Holds {
			st.Holders = append(st.Holders, c)
		} else {
			st.Waiters = append(st.Waiters, c)
		}
	}
	if v.gate != nil {
		gs, err := v.gate(ctx)
		if err != nil {
			return err
		}
		if len(gs) > 0 && gs[0].Holds {
			c := contender(gs[0])
			st.Gate = &c
		}
	}
	res.Lock = st
	return nil
}

// contender describes a holder of the lock v views.
func (v lockView) contender(h runtime.Holder) Contender {
	c := contender(h)
	if v.modes {
		c.Mode = "write"
		if h.Read {
			c.Mode = "read"
		}
	}
	return c
}

func contender(h runtime.Holder) Contender {
	return Contender{Node: h.Node, Seq: h.Seq, Host: h.Owner.Host, PID: h.Owner.PID, Session: h.Owner.Session,
		Purpose: h.Owner.Purpose, Created: h.Created, Revoke: !h.Owner.RevokeRequestedAt.IsZero()}
}

func (l *LockState) summary() string {
	var b strings.Builder
	switch {
	case l.Leases > 0:
		fmt.Fprintf(&b, "%d/%d leases held", len(l.Holders), l.Leases)
	case len(l.Holders) == 0:
		b.WriteString("free")
	case len(l.Holders) == 1:
		b.WriteString("held")
	default:
		fmt.Fprintf(&b, "held by %d readers", len(l.Holders))
	}
	if len(l.Waiters) > 0 {
		fmt.Fprintf(&b, ", %d waiting", len(l.Waiters))
	}
	return b.String()
}

func (l *LockState) details() [][3]string {
	var out [][3]string
	role := "holder"
	if l.Leases > 0 {
		role = "lease"
	}
	for _, c := range l.Holders {
		out = append(out, [3]string{role, who(c), "held " + age(c.AgeSeconds) + "  " + base(c.Node)})
	}
	for i, c := range l.Waiters {
		out = append(out, [3]string{fmt.Sprintf("waiter %d", i+1), who(c), "waiting " + age(c.AgeSeconds) + "  " + base(c.Node)})
	}
	if g := l.Gate; g != nil && len(l.Waiters) > 0 {
		out = append(out, [3]string{"blocking", who(*g), "holds the semaphore's lock " + age(g.AgeSeconds) + ": the waiters wait behind it  " + base(g.Node)})
	}
	return out
}

func (l *LockState) setAges(age func(time.Time) float64) {
	for j := range l.Holders {
		l.Holders[j].AgeSeconds = age(l.Holders[j].Created)
	}
	for j := range l.Waiters {
		l.Waiters[j].AgeSeconds = age(l.Waiters[j].Created)
	}
	if l.Gate != nil {
		l.Gate.AgeSeconds = age(l.Gate.Created)
	}
}

// union lists the holders of a and then those of b that a did not list: a
// semaphore's leases and waiters, and the holder of its internal lock, which
// Holders shows through its lease once it has one.
func union(ctx context.Context, a, b func(context.Context) ([]runtime.Holder, error)) ([]runtime.Holder, error) {
	hs, err := a(ctx)
	if err != nil {
		return nil, err
	}
	more, err := b(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range more {
		if !slices.ContainsFunc(hs, func(x runtime.Holder) bool { return x.Node == h.Node }) {
			hs = append(hs, h)
		}
	}
	return hs, nil
}

// semaphoreWatches covers both layouts: Curator's internal lock and lease
// directories, and kazoo's lease directory (whose data is the lease count)
// with its sibling lock.
func semaphoreWatches() []watchRule {
	var out []watchRule
	for _, d := range runtime.SemaphoreDirs() {
		out = append(out, kids(d))
	}
	return append(out, data(""), kids("+"+runtime.KazooSemaphoreLockSuffix))
}
