package client

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// What a handle needs the session to do at its close or end is registered
// here, through OnClose and OnEnd, rather than kept in the Session's
// fields: the session does not know the recipes. They are functions of
// this layer, not methods of Session, so that they stay out of the public
// Session (runtime.Session is this type): a stray Untrack would panic a
// wait group, a stray Track make Supervise wait for ever.

// CloseBound bounds what Close does for handles (a hook that does not
// return, or a Close called from a hook).
const CloseBound = 5 * time.Second

// closeHook is one handle's part in Close: run while the session lives,
// wait once its end is told.
type closeHook struct {
	run  func(context.Context) error
	wait <-chan struct{}
}

// hooks are the handles' registrations on one session, each with its
// place in the order of registration: hooks run in that order, the same
// on every run of a simulation.
type hooks struct {
	mu    sync.Mutex
	close map[*closeHook]uint64
	end   map[Ender]uint64
	seq   uint64 // registrations so far
	ended bool   // end hooks ran: OnEnd refuses
}

// OnClose registers on s what Close does for a handle: run is called while the
// session still lives, concurrently with the other handles' (a queue
// giving back its prefetched items, a partitioner member handing its
// partitions over); wait is a channel Close waits for once the session's end
// is told, before it closes the connection (a partitioner's readers
// finishing with their partitions). Either may be nil. Close bounds both,
// all handles together, by 5s. remove unregisters them.
func OnClose(s *Session, run func(context.Context) error, wait <-chan struct{}) (remove func()) {
	h := &closeHook{run: run, wait: wait}
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	if s.hooks.close == nil {
		s.hooks.close = map[*closeHook]uint64{}
	}
	s.hooks.seq++
	s.hooks.close[h] = s.hooks.seq
	return func() {
		s.hooks.mu.Lock()
		delete(s.hooks.close, h)
		s.hooks.mu.Unlock()
	}
}

// Ender is what a handle registers to be told of the session's end
// (OnEnd): a comparable value, a pointer normally.
type Ender interface {
	// SessionEnded is called once the session has ended, after Done is
	// closed. It must not block.
	SessionEnded()
}

// OnEnd registers e on s: the session's end (by Close or expiry) calls
// e.SessionEnded once. It reports false, and does not register e, when the
// session has ended already.
func OnEnd(s *Session, e Ender) bool {
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	if s.hooks.ended || s.Err() != nil {
		return false
	}
	if s.hooks.end == nil {
		s.hooks.end = map[Ender]uint64{}
	}
	if _, ok := s.hooks.end[e]; !ok {
		s.hooks.seq++
		s.hooks.end[e] = s.hooks.seq
	}
	return true
}

// OffEnd unregisters e from s (see OnEnd).
func OffEnd(s *Session, e Ender) {
	s.hooks.mu.Lock()
	delete(s.hooks.end, e)
	s.hooks.mu.Unlock()
}

// Track registers a tenure on s: something a handle holds while the session
// lives (a lock, a lease, a leadership, a membership) and that must tell
// its end. Supervise, once the session has ended, waits until every tracked
// tenure has called Untrack before it cancels the work's context, so that
// the work sees each loss first. It reports false, and registers nothing,
// when the session has ended already.
func Track(s *Session) bool {
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	if s.hooks.ended || s.Err() != nil {
		return false
	}
	s.tenures.Add(1)
	return true
}

// Untrack tells that a tenure Track registered has ended; call it once per
// Track that reported true.
func Untrack(s *Session) { s.tenures.Done() }

// runEnd runs the end hooks, once the session's end is told.
func (h *hooks) runEnd() {
	h.mu.Lock()
	es := inOrder(h.end)
	h.end, h.ended = nil, true
	h.mu.Unlock()
	for _, e := range es {
		e.SessionEnded()
	}
}

// closing returns the registered close hooks.
func (h *hooks) closing() []*closeHook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return inOrder(h.close)
}

// inOrder returns the keys of m by their values: registrations in the
// order they were made.
func inOrder[K comparable](m map[K]uint64) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b K) int { return cmp.Compare(m[a], m[b]) })
	return ks
}

// runClose runs every registered run function, concurrently, and returns
// what they reported; deadline bounds them.
func (h *hooks) runClose(deadline time.Time) error {
	var runs []func(context.Context) error
	for _, c := range h.closing() {
		if c.run != nil {
			runs = append(runs, c.run)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, run := range runs { // not Ops.Parallel: a hook may wait for another
		wg.Go(func() { errs[i] = run(ctx) })
	}
	wg.Wait()
	return JoinErrors(errs...)
}

// waitClose waits for every registered wait channel, until deadline.
func (h *hooks) waitClose(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for _, c := range h.closing() {
		if c.wait == nil {
			continue
		}
		select {
		case <-c.wait:
		case <-t.C:
			return
		}
	}
}
