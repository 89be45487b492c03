package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// delay returns the backoff before attempt n (1-based retry number), with
// up to 25% jitter so contending clients do not retry in lockstep.
func (p RetryPolicy) delay(n int) time.Duration {
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
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return DefaultRetry.Attempts
	}
	return p.Attempts
}

// retry runs op until it succeeds, fails with a non-recoverable error, the
// policy gives up, the session ends or ctx ends. Only for idempotent ops.
func (s *Session) retry(ctx context.Context, op func() error) error {
	for n := 1; ; n++ {
		if err := s.check(); err != nil {
			return err
		}
		err := op()
		if Classify(err) != Recoverable {
			return err
		}
		if n >= s.policy.attempts() {
			return fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n, err)
		}
		s.log.Debug("recoverable zookeeper error, retrying", "err", err, "attempt", n)
		if werr := s.sleep(ctx, s.policy.delay(n)); werr != nil {
			return werr
		}
	}
}

// sleep waits d, or returns early with ctx's error or the session's end.
func (s *Session) sleep(ctx context.Context, d time.Duration) error {
	if !pause(ctx, d, s.done) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return s.Err()
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
