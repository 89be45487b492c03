package runtime

import (
	"context"
	"errors"

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

// ignoreLost drops err when it is only the tenure's loss (sentinel).
func ignoreLost(err, sentinel error) error {
	if errors.Is(err, sentinel) {
		return nil
	}
	return err
}
