package runtime

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// snapshot is one state read by a watch loop: the value to deliver, a key
// that is equal for equal states (so an unchanged state is not delivered
// twice), and the watch left by the read, which fires when the state may
// have changed.
type snapshot[T any] struct {
	v     T
	key   string
	watch <-chan zk.Event
}

// stream runs read, delivers its state and runs it again every time the
// watch it left fires, until ctx or the session ends; then the returned
// channel is closed. Each read re-arms the watch in the same request that
// reads the state, so no change falls between two reads. A consumer slower
// than the changes sees the newest state, not every intermediate one: the
// channel holds at most one undelivered state, and a newer state replaces
// it. The final state is always delivered.
//
// When the session ends, one last state is delivered before the channel
// closes: ended(newest state, the session's error), so that the consumer
// learns why the stream stopped (unless ctx ends first: the caller knows
// why then). A read error other than the end of ctx or of the session is
// logged and the read retried after the retry policy's backoff.
func stream[T any](ctx context.Context, s *Session, what string, read func(context.Context) (snapshot[T], error), ended func(last T, err error) T) <-chan T {
	out := make(chan T)
	key := opsOf(s).BackoffKey()
	opsOf(s).Spawn(func() { // its first read goes out before the caller's next request
		defer close(out)
		var (
			pending  T
			have     bool   // pending is undelivered
			lastKey  string // key of the newest state delivered or pending
			anyState bool
			failures int
		)
		finish := func() { deliverEnd(ctx, out, ended(pending, s.Err())) }
		for {
			snap, err := read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if s.Err() != nil {
					finish()
					return
				}
				failures++
				opsOf(s).Log().Warn("watch: read failed; retrying", "what", what, "err", err)
				if opsOf(s).Sleep(ctx, opsOf(s).Backoff(key, min(failures, 10))) != nil {
					finish() // the session ended, or ctx: then nothing is sent
					return
				}
				continue
			}
			failures = 0
			if !anyState || snap.key != lastKey {
				pending, have, lastKey, anyState = snap.v, true, snap.key, true
			}
			for fired := false; !fired; {
				var send chan T
				if have {
					send = out
				}
				select {
				case send <- pending:
					have = false
				case <-snap.watch:
					fired = true
				case <-ctx.Done():
					return
				case <-s.Done():
					finish()
					return
				}
			}
		}
	})
	return out
}

// deliverEnd sends a stream's last state, the one that says why it ends,
// unless ctx ends first (the caller knows why then).
func deliverEnd[T any](ctx context.Context, out chan<- T, last T) {
	if ctx.Err() != nil {
		return
	}
	select {
	case out <- last:
	case <-ctx.Done():
	}
}

// failedStream is the stream of a handle that cannot work: v (whose Err
// says why), then the close; the close alone if ctx ends first.
func failedStream[T any](ctx context.Context, v T) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		deliverEnd(ctx, out, v)
	}()
	return out
}
