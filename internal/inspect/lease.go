package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	// A lease's slots are TTL nodes that the server removes by itself:
	// nothing for zkgen reap to break.
	register(spec.KindLease, kindOps{read: readLease, provision: provisionPath,
		// a renewal is a setData on the holder's slot
		watch: []watchRule{kids(""), data("*")}})
}

// LeaseState lists the held slots of a lease resource (kind: lease).
type LeaseState struct {
	Leases     int           `json:"leases"`      // the spec's lease count
	TTLSeconds float64       `json:"ttl_seconds"` // the spec's TTL
	Holders    []LeaseHolder `json:"holders"`
}

// LeaseHolder is one held slot.
type LeaseHolder struct {
	Node       string    `json:"node"`              // the slot node
	Holder     string    `json:"holder"`            // the holder id
	Host       string    `json:"host,omitempty"`    // where it acquired
	PID        int       `json:"pid,omitempty"`     //
	Renewed    time.Time `json:"renewed"`           // last create or renewal (server clock)
	Expires    time.Time `json:"expires"`           // Renewed + TTL: the earliest the server removes it
	AgeSeconds float64   `json:"age_seconds"`       // Taken - Renewed
	Acquired   time.Time `json:"acquired,omitzero"` // when it acquired (its clock)
}

func readLease(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	hs, err := runtime.NewTTLLeases(sess, p, r.Leases, r.TTL).Holders(ctx)
	if err != nil {
		return err
	}
	st := &LeaseState{Leases: r.Leases, TTLSeconds: r.TTL.Seconds(), Holders: []LeaseHolder{}}
	for _, h := range hs {
		st.Holders = append(st.Holders, LeaseHolder{Node: h.Node, Holder: h.Holder, Host: h.Host, PID: h.PID,
			Renewed: h.Renewed, Expires: h.Expires, Acquired: h.Acquired})
	}
	res.Lease = st
	return nil
}

func (l *LeaseState) summary() string {
	return fmt.Sprintf("%d/%d held, ttl %v", len(l.Holders), l.Leases, time.Duration(l.TTLSeconds*float64(time.Second)))
}

func (l *LeaseState) details() [][3]string {
	var out [][3]string
	for _, h := range l.Holders {
		w := h.Holder
		if h.Host != "" {
			w += fmt.Sprintf(" (%s pid %d)", h.Host, h.PID)
		}
		left := time.Duration(l.TTLSeconds*float64(time.Second)) - time.Duration(h.AgeSeconds*float64(time.Second))
		when := "expires in " + age(left.Seconds())
		if left <= 0 {
			when = "expired " + age(-left.Seconds()) + " ago (the server removes it soon)"
		}
		out = append(out, [3]string{"holder", w, "renewed " + age(h.AgeSeconds) + " ago, " + when + " (" + h.Expires.Local().Format(time.TimeOnly) + ")  " + base(h.Node)})
	}
	return out
}

func (l *LeaseState) setAges(age func(time.Time) float64) {
	for j := range l.Holders {
		l.Holders[j].AgeSeconds = age(l.Holders[j].Renewed)
	}
}
