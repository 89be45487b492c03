package runtime

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Recipes that run as long as the caller wants: each wraps an acquire, the
// caller's work under a context that ends with the tenure, and the release.
// Under Supervise (or a generated Run) they carry on across sessions: when
// the session ends they return its end (ErrSessionExpired or ErrClosed), and
// the next run starts them again on the new session.

// tenureCtx returns a context that ends when ctx ends or when the tenure
// whose context is held ends, with the tenure's cause.
// Its Err and Done ask held first, so a tenure's context that consults the
// session's clock when asked (see Lock.Context) passes that on.
func tenureCtx(ctx, held context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(held, func() { cancel(context.Cause(held)) })
	return &underTenure{Context: c, held: held, cancel: cancel}, func() { stop(); cancel(nil) }
}

// underTenure is a context that ends with a tenure's (see tenureCtx).
type underTenure struct {
	context.Context
	held   context.Context
	cancel context.CancelCauseFunc
}

// Err returns the context's error after asking the tenure's context.
func (c *underTenure) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.held.Err() != nil {
		c.cancel(context.Cause(c.held))
	}
	return c.Context.Err()
}

// Done returns the context's channel after asking the tenure's context.
func (c *underTenure) Done() <-chan struct{} {
	if c.held.Err() != nil {
		c.cancel(context.Cause(c.held))
	}
	return c.Context.Done()
}

// releaseCtx bounds a release that must happen even when ctx has ended.
func releaseCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// Do acquires the lock, runs fn with a context that also ends (cause
// wrapping ErrLockLost) if the lock is lost, and releases the lock, even
// when fn fails or ctx has ended. It returns the acquire's error, or fn's
// error joined with the release's (ErrLockLost if the lock was lost while
// fn ran: fn's work was then not exclusive to the end, see Guarded).
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := l.Lock(ctx); err != nil {
		return err
	}
	fctx, cancel := tenureCtx(ctx, l.Context())
	ferr := fn(fctx)
	cancel()
	rctx, rcancel := releaseCtx(ctx)
	defer rcancel()
	return errors.Join(ferr, l.Unlock(rctx))
}

// Do acquires a lease, runs fn with a context that also ends if the lease
// is lost, and releases the lease. Errors are as for Lock.Do.
func (m *Semaphore) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	le, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := tenureCtx(ctx, le.Context())
	ferr := fn(fctx)
	cancel()
	rctx, rcancel := releaseCtx(ctx)
	defer rcancel()
	return errors.Join(ferr, le.Release(rctx))
}

// Run campaigns with payload and, each time it is elected, runs fn with a
// context that ends when the leadership is lost (or ctx ends); when fn
// returns it resigns and campaigns again (Curator's LeaderSelector with
// auto-requeue). It returns nil when ctx ends, the session's end
// (ErrSessionExpired, ErrClosed) when the session ends, and fn's error when
// fn fails while still leader (after resigning). A fn that returns nil, or
// fails because its leadership was lost, is followed by a new campaign.
func (e *Election[T]) Run(ctx context.Context, payload T, fn func(ctx context.Context, l *Leadership[T]) error) error {
	for {
		l, err := e.Campaign(ctx, payload)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fctx, cancel := tenureCtx(ctx, l.Context())
		ferr := fn(fctx, l)
		cancel()
		lost := l.Context().Err() != nil
		rctx, rcancel := releaseCtx(ctx)
		rerr := l.Resign(rctx)
		rcancel()
		switch {
		case e.s.check() != nil:
			return e.s.check()
		case ctx.Err() != nil:
			return nil
		case ferr != nil && !lost:
			return errors.Join(ferr, ignoreLost(rerr, ErrLeadershipLost))
		}
	}
}

// Stay joins the group as member and stays a member until ctx ends (then
// it leaves and returns nil). If the member node is deleted while the
// session lives (reaped by an operator), it joins again after a short
// random pause. It returns the session's end when the session ends, so
// that under Supervise it joins again on the next session.
func (g *Group[T]) Stay(ctx context.Context, member T) error {
	return stay(ctx, g.s, "group", func(ctx context.Context) (stayer, error) {
		m, err := g.Join(ctx, member)
		if err != nil {
			return nil, err
		}
		return groupStayer[T]{m}, nil
	})
}

// stayer is a membership held by stay: a group's or a partitioner's.
type stayer interface {
	Node() string
	ended() <-chan struct{}          // closed when the membership has ended
	leave(ctx context.Context) error // Leave
}

type groupStayer[T any] struct{ *Membership[T] }

func (m groupStayer[T]) ended() <-chan struct{}          { return m.Lost() }
func (m groupStayer[T]) leave(ctx context.Context) error { return m.Leave(ctx) }

type partitionStayer[T any] struct{ *Assignment[T] }

// ended is closed once the loss was handled: every partition reported
// released.
func (a partitionStayer[T]) ended() <-chan struct{}          { return a.done }
func (a partitionStayer[T]) leave(ctx context.Context) error { return a.Leave(ctx) }

// stay is Stay's loop: join, stay until ctx or the membership ends, leave
// when ctx ended, return the session's end, join again after a pause when
// the membership alone was lost.
func stay(ctx context.Context, s *Session, what string, join func(context.Context) (stayer, error)) error {
	for {
		m, err := join(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
		case <-m.ended():
		}
		if err := s.check(); err != nil {
			<-m.ended()
			return err // the session's end comes first, even when ctx ended too
		}
		if ctx.Err() != nil {
			rctx, rcancel := releaseCtx(ctx)
			err := m.leave(rctx)
			rcancel()
			return ignoreLost(err, ErrMembershipLost)
		}
		_ = m.leave(ctx) // only frees the handle: the membership is lost already
		if err := s.check(); err != nil {
			return err
		}
		s.log.Warn(what+" membership lost while the session lives; joining again", "path", m.Node())
		if err := sleepCtx(ctx, rejoinPause()); err != nil {
			return nil
		}
	}
}

// rejoinPause is the random pause before a re-join, so that members whose
// nodes were removed together do not all come back at once.
func rejoinPause() time.Duration {
	return superviseBackoff.Initial + time.Duration(rand.Int64N(int64(superviseBackoff.Initial)*5))
}

// ignoreLost drops err when it is only the tenure's loss (sentinel).
func ignoreLost(err, sentinel error) error {
	if errors.Is(err, sentinel) {
		return nil
	}
	return err
}

// ConsumeOption configures Consume.
type ConsumeOption func(*consumeConfig)

type consumeConfig struct{ workers int }

// WithConcurrency lets Consume run fn on up to n items at once (default 1).
func WithConcurrency(n int) ConsumeOption {
	return func(c *consumeConfig) { c.workers = max(n, 1) }
}

// Consume takes items one at a time and runs fn on each, with a context
// that also ends when the session ends (the item's claim is then gone and
// it will be delivered again): it acks the item when fn returns nil and
// releases it (to be delivered again) when fn returns an error. It goes on
// until ctx ends (returns nil) or the session ends (returns its end). An
// undecodable item is left in place and skipped; another failure to take
// is returned. WithConcurrency runs several fn at once.
func (q *AckQueue[T]) Consume(ctx context.Context, fn func(ctx context.Context, item T) error, opts ...ConsumeOption) error {
	return consume(ctx, q.q.s, q.Take, fn, opts)
}

// Consume is AckQueue.Consume for a priority queue: items come in priority
// order.
func (q *AckPriorityQueue[T]) Consume(ctx context.Context, fn func(ctx context.Context, item T) error, opts ...ConsumeOption) error {
	return consume(ctx, q.q.s, q.Take, fn, opts)
}

func consume[T any](ctx context.Context, s *Session, take func(context.Context) (*Delivery[T], error), fn func(context.Context, T) error, opts []ConsumeOption) error {
	cfg := consumeConfig{workers: 1}
	for _, o := range opts {
		o(&cfg)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-s.done: // the claims are gone: stop the work on them
			cancel(s.check())
		case <-sctx.Done():
		}
	}()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := consumeLoop(sctx, s, take, fn); err != nil {
				errMu.Lock()
				if first == nil {
					first = err
					cancel(err)
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := s.check(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	return first
}

// consumeLoop is one worker of consume; ctx ends with the session too.
func consumeLoop[T any](ctx context.Context, s *Session, take func(context.Context) (*Delivery[T], error), fn func(context.Context, T) error) error {
	for ctx.Err() == nil {
		d, err := take(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrDecode) && d == nil:
			s.log.Warn("queue item skipped", "err", err)
			continue
		case err != nil:
			return err
		}
		ferr := fn(ctx, d.Value)
		rctx, rcancel := releaseCtx(ctx)
		if ferr == nil {
			err = d.Ack(rctx)
		} else {
			s.log.Debug("queue item released after a failure", "node", d.Node(), "err", ferr)
			err = d.Nack(rctx, ferr)
		}
		rcancel()
		if err != nil && !errors.Is(err, ErrClaimLost) && s.check() == nil {
			return err
		}
	}
	return nil
}

// Stay joins the partitioner as member and stays until ctx ends (then it
// releases every partition, leaves and returns nil); the partitions come
// and go through the hooks of WithPartitionHooks, among opts. If the
// member node is deleted while the session lives, it joins again after a
// short random pause. It returns the session's end when the session ends
// (every partition reported released first), so that under Supervise or a
// generated Run it joins again on the next session.
func (p *Partitioner[T]) Stay(ctx context.Context, member T, opts ...JoinOption) error {
	return stay(ctx, p.s, "partitioner", func(ctx context.Context) (stayer, error) {
		a, err := p.Join(ctx, member, opts...)
		if err != nil {
			return nil, err
		}
		return partitionStayer[T]{a}, nil
	})
}
