package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Run holds the registrations on session s and mirrors the base in the
// cache, until ctx ends (it deletes its registrations' nodes and returns
// nil), s ends (it returns s.Err(); the nodes went with the session) or
// the cache stops (ErrCacheFull). It blocks all that time. Under
// Supervise, call it in the work function: on the next session it
// registers everything again with the current data (what the last Update
// gave, even an Update made while no session ran) and the cache resyncs.
// One Run at a time (ErrServicesRunning otherwise).
func (d *Services[T]) Run(ctx context.Context, s *Session) error {
	if d.err != nil {
		return d.err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run, err := d.attach(rctx, s)
	if err != nil {
		return err
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- d.cache.Run(rctx, s) }()
	var cacheErr error
	select {
	case <-ctx.Done():
	case <-s.Done():
	case cacheErr = <-cacheDone:
	}
	cancel()
	regs := d.detach(run)
	if cacheErr == nil {
		cacheErr = <-cacheDone
	}
	if err := s.Err(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		wctx, wcancel := releaseCtx(ctx)
		defer wcancel()
		for _, r := range regs {
			_ = deleteOwn(wctx, s, r.path)
		}
		return nil
	}
	return cacheErr
}

// attach makes s the session registrations are held on and starts a
// keeper for each.
func (d *Services[T]) attach(ctx context.Context, s *Session) (*serviceRun, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.run != nil {
		return nil, fmt.Errorf("%w: on session 0x%x", ErrServicesRunning, d.run.s.ID())
	}
	d.run = &serviceRun{ctx: ctx, s: s, keepers: map[*serviceReg]chan struct{}{}}
	for _, r := range d.regs {
		d.startKeeperLocked(r)
	}
	return d.run, nil
}

// detach ends run: no keeper starts on it any more; it waits for run's
// keepers (run's ctx has ended) and returns the registrations they held,
// withdrawn ones included, for Run to delete their nodes when its ctx
// ended. d.run is cleared first, so that no keeper is added while the
// wait is under way.
func (d *Services[T]) detach(run *serviceRun) []*serviceReg {
	d.mu.Lock()
	d.run = nil
	regs := make([]*serviceReg, 0, len(run.keepers))
	for r := range run.keepers {
		regs = append(regs, r)
	}
	d.mu.Unlock()
	run.wg.Wait()
	return regs
}

func (d *Services[T]) startKeeperLocked(r *serviceReg) {
	run := d.run
	done := make(chan struct{})
	run.keepers[r] = done
	run.wg.Add(1)
	go func() {
		defer run.wg.Done()
		defer close(done)
		d.keep(run.ctx, run.s, r)
	}()
}

// keep holds r's node on s with r's current data until ctx ends, s ends
// or r is withdrawn.
func (d *Services[T]) keep(ctx context.Context, s *Session, r *serviceReg) {
	for ctx.Err() == nil && s.Err() == nil {
		d.mu.Lock()
		gen, data, removed := r.gen, r.data, r.removed
		d.mu.Unlock()
		if removed {
			return
		}
		w, held, err := d.hold(ctx, s, r.path, data)
		if err != nil {
			if ctx.Err() == nil && s.Err() == nil {
				opsOf(s).Log().Warn("service registration failed; trying again", "path", r.path, "err", err)
				_ = client.SleepCtx(ctx, servicePause)
			}
			continue
		}
		if held {
			d.markWritten(r, gen)
		}
		if w == nil {
			continue // created: read it back, with a watch
		}
		select {
		case <-ctx.Done():
		case <-s.Done():
		case <-w:
		case <-r.kick:
		}
	}
}

// hold makes path an ephemeral node of s holding data, if no other
// session holds it: it creates it, or rewrites it when it holds other
// data. held says path holds data on s now; the watch fires on the
// node's next change (nil: created, read it again).
func (d *Services[T]) hold(ctx context.Context, s *Session, path string, data []byte) (w <-chan zk.Event, held bool, err error) {
	res, exists, err := opsOf(s).GetOrExistsW(ctx, path)
	switch {
	case err != nil:
		return nil, false, err
	case !exists:
		return nil, false, d.create(ctx, s, path, data)
	case res.Stat.EphemeralOwner != s.ID():
		// Another session's node with our id: our own previous session
		// that the server has not expired yet, or another process. Wait
		// for it to go rather than show two registrations of one id.
		opsOf(s).Log().Warn("service registration waits for another session's node", "path", path,
			"owner", fmt.Sprintf("0x%x", res.Stat.EphemeralOwner))
		return res.Watch, false, nil
	case !bytes.Equal(res.Data, data):
		_, err := client.Await(ctx, s, func() (*zk.Stat, error) { return s.Conn().Set(path, data, res.Stat.Version) })
		if err != nil && !isVersionConflict(err) {
			return nil, false, client.OpError("set", path, err)
		}
		return nil, false, nil // read it back
	}
	return res.Watch, true, nil
}

// create creates path as an ephemeral node of s, its parents as
// containers. A node that exists already is not an error: hold reads it.
func (d *Services[T]) create(ctx context.Context, s *Session, p string, data []byte) error {
	for range 2 {
		_, err := client.Await(ctx, s, func() (string, error) {
			return opsOf(s).Create(p, data, zk.FlagEphemeral, d.acl)
		})
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case client.IsNoNode(err):
			if err := opsOf(s).EnsurePath(ctx, d.acl, path.Dir(p)); err != nil {
				return err
			}
		default:
			return client.OpError("create", p, err)
		}
	}
	return nil
}

// markWritten records that generation gen of r is on ZooKeeper.
func (d *Services[T]) markWritten(r *serviceReg, gen uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen > r.written {
		r.written = gen
		close(d.written)
		d.written = make(chan struct{})
	}
}

// isVersionConflict reports a write refused for its version.
func isVersionConflict(err error) bool { return errors.Is(err, zk.ErrBadVersion) }
