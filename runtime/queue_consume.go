package runtime

import (
	"context"
	"errors"
	"sync"
)

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
		case <-s.Done(): // the claims are gone: stop the work on them
			cancel(s.Err())
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
	if err := s.Err(); err != nil {
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
			s.Ops().Log().Warn("queue item skipped", "err", err)
			continue
		case err != nil:
			return err
		}
		ferr := fn(ctx, d.Value)
		rctx, rcancel := releaseCtx(ctx)
		if ferr == nil {
			err = d.Ack(rctx)
		} else {
			s.Ops().Log().Debug("queue item released after a failure", "node", d.Node(), "err", ferr)
			err = d.Nack(rctx, ferr)
		}
		rcancel()
		if err != nil && !errors.Is(err, ErrClaimLost) && s.Err() == nil {
			return err
		}
	}
	return nil
}
