package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Semaphore protocol, kazoo's layout (WithLayout(LayoutKazoo))
//
// Python kazoo's Semaphore, in its layout:
//
//	<dir>                  persistent; its data is the number of leases,
//	                       decimal ASCII (kazoo's max_leases)
//	<dir>/<uuid hex>       one ephemeral node per lease; kazoo counts every
//	                       child of <dir> as a lease
//	<dir>-__lock__/<hex>__lock__<seq>  a kazoo Lock (a sibling directory)
//	                       serialising acquirers
//
// An acquirer takes the sibling lock, then lists <dir> with a children
// watch: while there are as many children as leases it waits for the
// watch, else it creates its lease node; then it releases the lock. Only
// the lock's holder watches <dir>, so a release wakes one client. The
// directory's number is the guard that kazoo itself applies: a handle whose
// leases differ from it is refused (ErrSpecMismatch) before it takes part.

// kazooLockSuffix names the sibling lock directory of a kazoo semaphore.
const kazooLockSuffix = "-__lock__"

// guardKazoo makes sure the semaphore's directory records m.leases as
// kazoo's max_leases: it creates the directory with it (persistent, as
// kazoo does: a container could vanish under a kazoo client that created
// it once), writes it into a directory without data, and refuses a
// directory that holds another number or something else.
func (m *Semaphore) guardKazoo(ctx context.Context) error {
	key := "kazoo semaphore " + m.dir // not a path: not the key of another guard on this session
	if _, ok := specsOf(m.s).ok.Load(key); ok {
		return nil
	}
	want := []byte(strconv.Itoa(m.leases))
	for {
		data, st, err := opsOf(m.s).Get(ctx, m.dir)
		switch {
		case client.IsNoNode(err):
			if parent := parentPath(m.dir); parent != "/" {
				if err := opsOf(m.s).EnsurePath(ctx, m.acl, parent); err != nil {
					return err
				}
			}
			_, err := client.Await(ctx, m.s, func() (string, error) { return opsOf(m.s).Create(m.dir, want, 0, m.acl) })
			if errors.Is(err, zk.ErrNodeExists) || client.IsNoNode(err) {
				continue // created meanwhile, or the parent vanished: look again
			}
			if err != nil && !IsRecoverable(err) {
				return client.OpError("create", m.dir, err)
			}
			continue // read what is there now
		case err != nil:
			return err
		case len(data) == 0:
			_, err := client.Await(ctx, m.s, func() (*zk.Stat, error) { return m.s.Conn().Set(m.dir, want, st.Version) })
			if err != nil && !errors.Is(err, zk.ErrBadVersion) && !IsRecoverable(err) {
				return client.OpError("set", m.dir, err)
			}
			continue
		}
		n, perr := strconv.Atoi(strings.TrimSpace(string(data)))
		if perr != nil {
			return fmt.Errorf("semaphore %s: %w: the directory holds %q, not kazoo's number of leases (a semaphore of another layout uses it?)",
				m.dir, ErrSpecMismatch, truncate(data, 40))
		}
		if n != m.leases {
			return fmt.Errorf("semaphore %s: %w: the directory records kazoo's max_leases %d, this handle has %d leases",
				m.dir, ErrSpecMismatch, n, m.leases)
		}
		specsOf(m.s).ok.Store(key, struct{}{})
		return nil
	}
}

// acquireKazoo is acquire in kazoo's layout.
func (m *Semaphore) acquireKazoo(ctx context.Context, purpose string, wait bool) (*hold, error) {
	if err := m.guardKazoo(ctx); err != nil {
		return nil, err
	}
	if ok, err := m.lockInternal(ctx, wait); err != nil || !ok {
		return nil, err
	}
	defer m.unlockInternal()
	node := joinPath(m.dir, string(opsOf(m.s).Rand().AppendGUID(nil, false)))
	var token int64
	for {
		r, err := opsOf(m.s).ChildrenW(ctx, m.dir)
		if err != nil {
			return nil, err
		}
		if len(r.Kids) < m.leases {
			// Detached from ctx (bounded by the retry policy and the
			// session), so its outcome is known and a cancelled acquire
			// leaves no lease behind.
			err := m.createLease(context.WithoutCancel(ctx), node, ownerData(m.s, purpose))
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				return nil, abandonNode(m.s, node, err)
			}
			token = r.Stat.Pzxid
			break
		}
		if !wait {
			return nil, nil // every lease held now: TryAcquire's false
		}
		select {
		case <-r.Watch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.s.Done():
			return nil, m.s.Err()
		case <-m.mutex.Lost():
			return nil, fmt.Errorf("semaphore %s: internal lock lost while waiting: %w", m.dir, ErrLockLost)
		}
	}
	h, err := startHold(ctx, m.s, node, token, false)
	if err != nil {
		return nil, abandonNode(m.s, node, err)
	}
	return h, nil
}

// lockInternal takes the internal lock: waiting for it, or (without wait)
// only if it is free now, reporting false otherwise.
func (m *Semaphore) lockInternal(ctx context.Context, wait bool) (bool, error) {
	if !wait {
		return m.mutex.TryLock(ctx)
	}
	return true, m.mutex.Lock(ctx)
}

// unlockInternal releases the internal lock (bounded, detached from the
// caller's context).
func (m *Semaphore) unlockInternal() {
	uctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	if err := m.mutex.Unlock(uctx); err != nil {
		opsOf(m.s).Log().Warn("semaphore: releasing the internal lock", "path", m.mutex.Path(), "err", err)
	}
}

// createLease creates the ephemeral lease node, whose name is unique to
// this attempt: after a connection loss the create is sent again, and a
// node found existing is ours if this session owns it.
func (m *Semaphore) createLease(ctx context.Context, node string, data []byte) error {
	created, err := opsOf(m.s).CreateIfAbsent(ctx, node, data, zk.FlagEphemeral, m.acl)
	if err != nil || created {
		return err
	}
	_, st, err := opsOf(m.s).Get(ctx, node)
	switch {
	case err != nil:
		return err
	case st.EphemeralOwner != m.s.ID():
		return client.OpError("create", node, zk.ErrNodeExists)
	}
	return nil // ours: the reply of a create that went through was lost
}

// holdersKazoo lists the lease holders (every child of the directory, in
// creation order) with their metadata.
func (m *Semaphore) holdersKazoo(ctx context.Context) ([]Holder, error) {
	kids, err := opsOf(m.s).Children(ctx, m.dir)
	if client.IsNoNode(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, k := range kids {
		p := joinPath(m.dir, k)
		data, st, err := opsOf(m.s).Get(ctx, p)
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		o, known := parseOwner(data)
		out = append(out, Holder{Node: p, Token: st.Czxid, Created: time.UnixMilli(st.Ctime).UTC(), Holds: true, Owner: o, Known: known})
	}
	slices.SortFunc(out, func(a, b Holder) int { return int(min(max(a.Token-b.Token, -1), 1)) })
	return out, nil
}

// reapKazoo deletes lease nodes created before olderThan ago.
func (m *Semaphore) reapKazoo(ctx context.Context, olderThan time.Duration) ([]Holder, error) {
	hs, err := m.holdersKazoo(ctx)
	if err != nil {
		return nil, err
	}
	return reapListed(ctx, m.s, m.dir, hs, olderThan)
}

// parentPath returns the parent of an absolute path ("/" for a top-level
// node).
func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// truncate shortens data for an error message.
func truncate(data []byte, n int) string {
	if len(data) > n {
		return string(data[:n]) + "..."
	}
	return string(data)
}
