package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// curatorRevoke is the data Curator's Revoker writes into a lock node to ask
// its holder to release; holders here honour it too.
const curatorRevoke = "__REVOKE__"

// revokeRequested reports whether lock node data carries a revocation
// request: ours (owner metadata with revoke_requested_at) or Curator's.
func revokeRequested(data []byte) bool {
	if string(data) == curatorRevoke {
		return true
	}
	o, ok := parseOwner(data)
	return ok && !o.RevokeRequestedAt.IsZero()
}

// Revoked returns a channel closed when another contender has asked the
// current holder to release the lock (RequestRevoke). Releasing is up to the
// holder: it should finish or abandon its work and Unlock. For a lock that is
// not revocable, or when nothing is held, the channel never closes.
func (l *Lock) Revoked() <-chan struct{} {
	if h := l.current(); h != nil && l.cfg.revocable {
		return h.revoked
	}
	return neverCh
}

// RequestRevoke asks the current holder(s) of the lock — every node that
// holds it, except this handle's own — to release it, by marking the
// revocation request in their node's data (their Revoked channel closes).
// Without force_after it returns once the requests are written. With
// force_after it then waits until the holders have released, and deletes the
// nodes of those that have not after force_after (their Lost fires); it
// returns when every one is gone, or with ctx's error. It returns
// ErrNotRevocable for a lock declared without revocation.
func (l *Lock) RequestRevoke(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	if !l.cfg.revocable {
		return fmt.Errorf("lock %s: %w", l.dir, ErrNotRevocable)
	}
	hs, err := l.s.holders(ctx, l.dir, l.fam)
	if err != nil {
		return err
	}
	var own string
	if h := l.current(); h != nil {
		own = h.node
	}
	var targets []string
	for _, h := range hs {
		if h.Holds && h.Node != own {
			if err := l.s.markRevoke(ctx, h.Node); err != nil {
				return err
			}
			targets = append(targets, h.Node)
		}
	}
	if l.cfg.forceAfter <= 0 || len(targets) == 0 {
		return nil
	}
	deadline := time.NewTimer(l.cfg.forceAfter)
	defer deadline.Stop()
	forced := false
	for _, node := range targets {
		for !forced {
			r, err := l.s.getW(ctx, node)
			if errors.Is(err, zk.ErrNoNode) {
				break // released
			}
			if err != nil {
				return err
			}
			select {
			case <-r.watch:
				continue
			case <-deadline.C:
				forced = true
			case <-ctx.Done():
				return ctx.Err()
			case <-l.s.done:
				return l.s.Err()
			}
		}
		if forced {
			if err := l.s.delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			l.s.log.Warn("revocation forced: deleted holder's lock node", "path", node, "after", l.cfg.forceAfter)
		}
	}
	return nil
}

// markRevoke records a revocation request in the data of node, keeping the
// owner metadata (compare-and-set on the node's version).
func (s *Session) markRevoke(ctx context.Context, node string) error {
	for {
		data, st, err := s.get(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // released meanwhile
		}
		if err != nil {
			return err
		}
		if revokeRequested(data) {
			return nil
		}
		o, ok := parseOwner(data)
		if !ok {
			// A node of another library: write Curator's request.
			data = []byte(curatorRevoke)
		} else {
			o.RevokeRequestedAt = time.Now().UTC().Truncate(time.Millisecond)
			data, _ = json.Marshal(o)
		}
		err = s.retry(ctx, func() error {
			_, err := await(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(node, data, st.Version) })
			return err
		})
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // changed meanwhile (or our lost reply applied): look again
		default:
			return opError("set", node, err)
		}
	}
}
