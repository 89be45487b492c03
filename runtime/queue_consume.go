package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrGiveBack marks an error of Consume's function that is not the
// item's fault (no GPU lease yet, shutting down, a dependency down):
// Consume gives the item back without counting the delivery (see
// Delivery.GiveBack) instead of releasing it. Wrap it with GiveBack or
// fmt.Errorf's %w.
var ErrGiveBack = errors.New("queue: given back (not the item's fault)")

// GiveBack returns err marked with ErrGiveBack (ErrGiveBack itself when
// err is nil), for Consume's function to return when it could not run an
// item for a reason of its own. errors.Is finds both in the result.
func GiveBack(err error) error {
	if err == nil {
		return ErrGiveBack
	}
	return fmt.Errorf("%w: %w", ErrGiveBack, err)
}

// ConsumeOption configures Consume.
type ConsumeOption func(*consumeConfig)

type consumeConfig struct {
	workers int
	backoff backoff
}

// WithConcurrency lets Consume run fn on up to n items at once (default 1).
func WithConcurrency(n int) ConsumeOption {
	return func(c *consumeConfig) { c.workers = max(n, 1) }
}

// WithBackoff sets how Consume backs off after its function fails. An item
// whose function returned an error is released with After(d) (counted,
// kept out of every consumer's sight for d), d being initial for its first
// delivery and doubling with each Attempt, up to maxDelay. A worker whose
// function returned an ErrGiveBack error gives the item back at once,
// uncounted, for another worker to take, and pauses itself, initial after
// its first give-back in a row and doubling up to maxDelay, before it
// takes the next item. The default is 1 s doubling up to 1 min.
// WithBackoff(0, 0) releases at once and never pauses, as Consume did
// before it backed off.
func WithBackoff(initial, maxDelay time.Duration) ConsumeOption {
	return func(c *consumeConfig) { c.backoff = backoff{initial, max(initial, maxDelay)} }
}

// defaultBackoff is Consume's backoff without WithBackoff.
var defaultBackoff = backoff{initial: time.Second, max: time.Minute}

// backoff is a delay that doubles with each try, from initial up to max.
type backoff struct{ initial, max time.Duration }

// after is the delay after the n-th try (from 1); 0 when initial is.
func (b backoff) after(n int) time.Duration {
	d := b.initial
	for i := 1; i < n && d < b.max; i++ {
		if d > b.max/2 {
			return b.max
		}
		d *= 2
	}
	return min(d, b.max)
}

// Consume takes items one at a time and runs fn on each, with a context
// that also ends when the session ends (the item's claim is then gone and
// it will be delivered again). When fn returns nil it acks the item. When
// fn returns an error marked with ErrGiveBack (see GiveBack) it gives the
// item back uncounted, at once, and this worker pauses before its next
// take; any other error nacks the item with it, counted (toward
// WithDeadLetterAfter) and kept out of sight for a while, during which the
// worker goes on with other items (WithBackoff: by default 1 s after a
// first delivery, doubling per Attempt up to 1 min). It goes on until ctx
// ends (returns nil) or the session ends (returns its end). An
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
	cfg := consumeConfig{workers: 1, backoff: defaultBackoff}
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
			if err := consumeLoop(sctx, s, cfg.backoff, take, fn); err != nil {
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
// After a give-back it pauses before its next take, longer after each
// give-back in a row.
func consumeLoop[T any](ctx context.Context, s *Session, b backoff, take func(context.Context) (*Delivery[T], error), fn func(context.Context, T) error) error {
	gaveBack := 0 // give-backs in a row
	for ctx.Err() == nil {
		d, err := take(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrDecode) && d == nil:
			opsOf(s).Log().Warn("queue item skipped", "err", err)
			continue
		case err != nil:
			return err
		}
		ferr := fn(ctx, d.Value)
		if err := settleConsumed(ctx, s, b, d, ferr); err != nil {
			return err
		}
		if ferr == nil || !errors.Is(ferr, ErrGiveBack) {
			gaveBack = 0
			continue
		}
		gaveBack++
		if opsOf(s).Sleep(ctx, b.after(gaveBack)) != nil {
			return nil // ctx or the session ended
		}
	}
	return nil
}

// settleConsumed acks, gives back or nacks d after fn returned ferr (see
// Consume). A claim lost with the session is not an error here.
func settleConsumed[T any](ctx context.Context, s *Session, b backoff, d *Delivery[T], ferr error) error {
	rctx, rcancel := releaseCtx(ctx)
	defer rcancel()
	var err error
	switch {
	case ferr == nil:
		err = d.Ack(rctx)
	case errors.Is(ferr, ErrGiveBack):
		opsOf(s).Log().Debug("queue item given back", "node", d.Node(), "err", ferr)
		err = d.GiveBack(rctx)
	default:
		opsOf(s).Log().Debug("queue item released after a failure", "node", d.Node(), "err", ferr)
		err = d.Nack(rctx, ferr, After(b.after(d.Attempt)))
	}
	if err != nil && !errors.Is(err, ErrClaimLost) && s.Err() == nil {
		return err
	}
	return nil
}
