package client

import (
	"context"
	"fmt"
	"time"
)

// RetryPolicy is exponential backoff with a cap for recoverable errors of
// idempotent operations. Non-idempotent operations (sequential creates) are
// never blindly retried: they are recovered by GUID instead.
type RetryPolicy struct {
	Initial  time.Duration // first delay; default 50ms
	Max      time.Duration // cap on one delay; default 2s
	Attempts int           // total attempts including the first; default 10
}

// DefaultRetry is the policy used when WithRetry is not given.
var DefaultRetry = RetryPolicy{Initial: 50 * time.Millisecond, Max: 2 * time.Second, Attempts: 10}

// Delay returns the backoff before attempt n (1-based retry number), with
// up to 25% jitter so contending clients do not retry in lockstep.
func (p RetryPolicy) Delay(n int) time.Duration { return p.delay(n, nil, 0) }

// delay is Delay with its jitter drawn from r for key (Rand.Int64NFor).
func (p RetryPolicy) delay(n int, r *Rand, key uint64) time.Duration {
	d := p.Initial
	if d <= 0 {
		d = DefaultRetry.Initial
	}
	maxD := p.Max
	if maxD <= 0 {
		maxD = DefaultRetry.Max
	}
	for i := 1; i < n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	return d - time.Duration(r.Int64NFor(key, int64(d)/4+1))
}

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return DefaultRetry.Attempts
	}
	return p.Attempts
}

// Retry runs op until it succeeds, fails with a non-recoverable error, the
// policy gives up, the session ends or ctx ends. op only reads: a write is
// sent again only by the retry-safe writes of retry_writes.go, or by
// RetryUncertain (TestRetryWrapsOnlyReads).
func (s *Ops) Retry(ctx context.Context, op func() error) error {
	return s.retry(ctx, s.policy.attempts(), op)
}

// RetryAlive is Retry without the policy's bound on attempts: it retries
// recoverable errors (with the policy's backoff) for as long as the session
// lives and ctx lasts. It is for the reads that resolve the outcome of an
// uncertain write: while the session lives the outcome can still be
// learned, and the session's own clock bounds how long it lives cut off
// (see WithSessionTimeout), so giving up earlier would call uncertain a
// write whose outcome was about to be known (a quorum restored after the
// policy's ten attempts, about 9 s). op only reads, as Retry's.
func (s *Ops) RetryAlive(ctx context.Context, op func() error) error {
	return s.retry(ctx, 0, op)
}

// retry is Retry with a bound of attempts attempts; 0: none. Within a
// write's settle step (see RetryUncertain) there is no bound either.
func (s *Ops) retry(ctx context.Context, attempts int, op func() error) error {
	if ctx.Value(settlingKey{}) != nil {
		attempts = 0
	}
	key := s.BackoffKey()
	for n := 1; ; n++ {
		if err := s.session().Err(); err != nil {
			return err
		}
		err := op()
		if Classify(err) != Recoverable {
			return err
		}
		if attempts > 0 && n >= attempts {
			return exhausted(n, err)
		}
		s.log.Debug("recoverable zookeeper error, retrying", "err", err, "attempt", n)
		s.metrics.retried(Recoverable)
		if werr := s.Sleep(ctx, s.Backoff(key, n)); werr != nil {
			return werr
		}
	}
}

// Sleep waits d, or returns early with ctx's error or the session's end.
func (s *Ops) Sleep(ctx context.Context, d time.Duration) error {
	if !pause(ctx, d, s.done) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return s.session().Err()
	}
	return nil
}

// pause waits d; it reports false if ctx ended or stop closed first.
func pause(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// --- Writes whose outcome a connection loss can hide
//
// A write that is not idempotent (a sequential create, a multi, a
// compare-and-set) cannot be sent again blindly when its reply is lost to a
// connection loss: it may have taken effect. Every such write of the
// runtime runs in RetryUncertain, one loop of one shape. Each attempt sends
// the write and says what it learnt (an outcome):
//
//   - outcomeKnown: the result, success or a definite failure, is final;
//   - outcomeResend: send again at once (the write raced with another
//     writer, or a missing parent was just created);
//   - outcomeHidden: a connection loss hid whether the write took effect.
//
// After a hidden outcome the loop backs off (the retry policy's delay).
// Then a write that has a way to learn whether it took effect — its marker
// node, its GUID, the node's version or content — settles: the outcome is
// known, or the write certainly did not happen and is sent again. A write
// without a settle step learns it from the read that begins its next
// attempt. The policy gives up (ErrRetriesExhausted, wrapping the error that
// hid the outcome) once its attempts are used up and the outcome is still
// not known: a write with a settle step always settles first.
//
// A settle step's reads are retried for as long as the session lives and
// ctx lasts, not for the policy's attempts (as RetryAlive): while the
// session lives the outcome can still be learned, and a quorum that comes
// back after the policy's attempts would otherwise leave a write that took
// effect reported as failed (a lock's node, kept by the live session,
// then holds the lock for nobody).

// Outcome is what one attempt of a write tells RetryUncertain.
type Outcome int

const (
	OutcomeKnown  Outcome = iota // the attempt's result is final
	OutcomeResend                // send again at once
	OutcomeHidden                // a connection loss hid the result
)

// UncertainWrite is a write for RetryUncertain.
type UncertainWrite struct {
	// Op and Path name the write in the error returned when the policy
	// gives up.
	Op, Path string
	// Attempt sends the write once; n counts attempts from 1. With
	// outcomeHidden it returns the recoverable error that hid the result.
	Attempt func(n int) (Outcome, error)
	// Settle learns, after the back-off, whether an attempt whose outcome
	// was hidden took effect: outcomeKnown with the result, or
	// outcomeResend when it did not. Its reads are to use ctx, which lifts
	// the policy's bound on their attempts (see above). nil: the next
	// attempt's own read tells.
	Settle func(ctx context.Context) (Outcome, error)
	// Interrupted wraps the error that cuts the back-off short (the end of
	// ctx or of the session); nil returns it as is.
	Interrupted func(error) error
}

// RetryUncertain runs w until its outcome is known, or the retry policy
// gives up (see above).
func (s *Ops) RetryUncertain(ctx context.Context, w UncertainWrite) error {
	key := s.BackoffKey()
	for n := 1; ; n++ {
		o, err := w.Attempt(n)
		switch o {
		case OutcomeKnown:
			return err
		case OutcomeResend:
			s.metrics.retried(Normal)
			continue
		}
		// Under UntilSessionEnds there is no bound: the session's end
		// or ctx's ends the loop.
		last := n >= s.policy.attempts() && ctx.Value(settlingKey{}) == nil
		if last && w.Settle == nil {
			return w.giveUp(n, err)
		}
		if werr := s.Sleep(ctx, s.Backoff(key, n)); werr != nil {
			if w.Interrupted != nil {
				return w.Interrupted(werr)
			}
			return werr
		}
		if w.Settle == nil {
			s.metrics.retried(Recoverable)
			continue
		}
		if o, serr := w.Settle(settling(ctx)); o == OutcomeKnown {
			return serr
		}
		if last {
			return w.giveUp(n, err)
		}
		s.metrics.retried(Recoverable)
	}
}

// settlingKey marks the context of a settle step (see retry).
type settlingKey struct{}

// settling is ctx for the reads of a settle step: Ops.Retry retries them
// without the policy's bound.
func settling(ctx context.Context) context.Context {
	return context.WithValue(ctx, settlingKey{}, true)
}

// giveUp is the error of a write whose outcome stayed hidden after n
// attempts; cause is the error that hid it.
func (w UncertainWrite) giveUp(n int, cause error) error {
	return OpError(w.Op, w.Path, exhausted(n, cause))
}

// exhausted is the error of a retry policy that gave up after n attempts,
// the last of which failed with cause.
func exhausted(n int, cause error) error {
	return fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n, cause)
}

// AfterSend classifies the error of a write that was sent and failed in a
// way the recipe does not handle itself: a recoverable error hid the
// outcome; any other is final, wrapped with op and path.
func AfterSend(op, path string, err error) (Outcome, error) {
	if IsRecoverable(err) {
		return OutcomeHidden, err
	}
	return OutcomeKnown, OpError(op, path, err)
}
