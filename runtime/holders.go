package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Holder describes one contender node of a lock: the holder(s) first, then
// the waiters in queue order.
type Holder struct {
	Node    string    // full znode path
	Seq     int32     // sequence number
	Token   int64     // creation zxid: the fencing token if it holds
	Created time.Time // creation time (server clock)
	Holds   bool      // true for the current holder(s)
	Read    bool      // a read-lock node (read/write locks only)
	Owner   Owner     // metadata written by the contender
	Known   bool      // false when the node carries no zkgen metadata (e.g. Curator's)
}

// Holders returns the lock's holder(s) followed by its waiters, in queue
// order, with their owner metadata (for a read/write lock, both sides).
// Nodes that disappear while being read are left out. An absent directory
// gives an empty list.
func (l *Lock) Holders(ctx context.Context) ([]Holder, error) {
	if l.err != nil {
		return nil, l.err
	}
	return l.s.holders(ctx, l.dir, l.fam)
}

// holders lists the contenders of dir in queue order; those that no earlier
// node blocks hold.
func (s *Session) holders(ctx context.Context, dir string, fam *family) ([]Holder, error) {
	kids, err := s.children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cs := fam.sortContenders(kids)
	out := make([]Holder, len(cs))
	ok := make([]bool, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // bound the requests in flight
	for i, c := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := joinPath(dir, c.name)
			data, st, err := s.get(ctx, p)
			if errors.Is(err, zk.ErrNoNode) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			o, known := parseOwner(data)
			out[i] = Holder{Node: p, Seq: c.seq, Token: st.Czxid, Created: time.UnixMilli(st.Ctime).UTC(), Owner: o, Known: known,
				Holds: fam.blocker(cs, i) < 0, Read: len(fam.markers) == 2 && c.kind == kindRead}
			ok[i] = true
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := out[:0]
	for i := range out {
		if ok[i] {
			res = append(res, out[i])
		}
	}
	return res, nil
}

// Reap deletes the lock's contender nodes (holder or waiters) created more
// than olderThan ago by the server's clock, as HBase's reapExpiredLocks does,
// and returns what it removed. Use it to break locks left by stuck processes
// whose sessions stay alive; a reaped holder's Lost fires. Ages compare the
// server's creation time with this machine's clock, so allow for skew.
func (l *Lock) Reap(ctx context.Context, olderThan time.Duration) ([]Holder, error) {
	if l.err != nil {
		return nil, l.err
	}
	return l.s.reap(ctx, l.dir, l.fam, olderThan)
}

func (s *Session) reap(ctx context.Context, dir string, fam *family, olderThan time.Duration) ([]Holder, error) {
	hs, err := s.holders(ctx, dir, fam)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-olderThan)
	var removed []Holder
	for _, h := range hs {
		if !h.Created.Before(cutoff) {
			continue
		}
		err := s.delete(ctx, h.Node, -1)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("reap %s: %w", dir, err)
		}
		s.log.Info("reaped lock node", "path", h.Node, "owner", h.Owner.Host, "created", h.Created)
		removed = append(removed, h)
	}
	return removed, nil
}
