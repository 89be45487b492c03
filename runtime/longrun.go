package runtime

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// What the long-running calls share. Each call lives with its family
// (Lock.Do in lock.go, Semaphore.Do in semaphore.go, Election.Run in
// election.go, Group.Stay in group.go, Partitioner.Stay in partitioner.go,
// Consume in queue_consume.go): it wraps an acquire, the caller's work under
// a context that ends with the tenure, and the release. Under Supervise (or
// a generated Run) they carry on across sessions: when the session ends
// they return its end (ErrSessionExpired or ErrClosed), and the next run
// starts them again on the new session.

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
	return context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
}

// stayer is a membership held by stay: a group's or a partitioner's.
type stayer interface {
	Node() string
	ended() <-chan struct{}          // closed when the membership has ended
	leave(ctx context.Context) error // Leave
}

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
		if err := s.Err(); err != nil {
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
		if err := s.Err(); err != nil {
			return err
		}
		s.Ops().Log().Warn(what+" membership lost while the session lives; joining again", "path", m.Node())
		if err := client.SleepCtx(ctx, rejoinPause()); err != nil {
			return nil
		}
	}
}

// rejoinPause is the random pause before a re-join, so that members whose
// nodes were removed together do not all come back at once.
func rejoinPause() time.Duration {
	return client.SuperviseBackoff.Initial + time.Duration(rand.Int64N(int64(client.SuperviseBackoff.Initial)*5))
}

// ignoreLost drops err when it is only the tenure's loss (sentinel).
func ignoreLost(err, sentinel error) error {
	if errors.Is(err, sentinel) {
		return nil
	}
	return err
}
