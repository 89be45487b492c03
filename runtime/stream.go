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
// A read error other than the end of ctx or of the session is logged and
// the read retried after the retry policy's backoff.
func stream[T any](ctx context.Context, s *Session, what string, read func(context.Context) (snapshot[T], error)) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		var (
			pending  T
			have     bool   // pending is undelivered
			lastKey  string // key of the newest state delivered or pending
			anyState bool
			failures int
		)
		for {
			snap, err := read(ctx)
			if err != nil {
				if ctx.Err() != nil || s.check() != nil {
					return
				}
				failures++
				s.log.Warn("watch: read failed; retrying", "what", what, "err", err)
				if s.sleep(ctx, s.policy.delay(min(failures, 10))) != nil {
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
				case <-s.done:
					return
				}
			}
		}
	}()
	return out
}
