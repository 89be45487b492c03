package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The reads that learn whether a write whose reply was lost took effect
// go on while the session lives, not only for the retry policy's
// attempts: while the session lives the outcome can still be learned (see
// client.RetryUncertain). The tests below lose a write's reply, then keep
// ZooKeeper out of reach for longer than their policy (two attempts, a
// few milliseconds apart) but well within the session's life (30 s).

// shortPolicySession connects through px with a 30 s session and a retry
// policy that gives up after two attempts.
func shortPolicySession(t *testing.T, px *zktest.Proxy) *runtime.Session {
	return connect(t, viaProxy(px), runtime.WithSessionTimeout(30*time.Second),
		runtime.WithRetry(runtime.RetryPolicy{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond, Attempts: 2}))
}

// outageAfter cuts the connection right after the next request with
// opcode op has taken effect, and refuses every connection from then
// until 4 s after the cut (go-zookeeper fails the requests queued while
// it is disconnected each time it has tried every server, about once a
// second, so a two-attempt policy is used up well within it).
func outageAfter(ctx context.Context, px *zktest.Proxy, op int32) {
	cut := px.CutAfterRequest(op)
	px.Reject(true)
	go func() {
		select {
		case <-cut:
		case <-ctx.Done():
			return
		}
		select {
		case <-time.After(4 * time.Second): // the outage's length, not a synchronisation
		case <-ctx.Done():
		}
		px.Reject(false)
	}()
}

// Config.Set: "succeeds when the node holds its value at the version its
// write made" (docs/config-counter.md). Before, the sync and read that
// tell were bounded by the policy: Set failed with ErrRetriesExhausted,
// which is not ErrOutcomeUnknown, although the value was written.
func TestConfigSetOutlastsRetryPolicy(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	px := zktest.NewProxy(t, srv.Addr())
	p := runtime.At(testRoot(t)).Lit("value")
	c := runtime.NewConfig(shortPolicySession(t, px), p, runtime.JSONCodec[int]())
	if _, err := c.Set(ctx, 1); err != nil {
		t.Fatal(err)
	}
	outageAfter(ctx, px, zktest.OpSetData)
	ver, err := c.Set(ctx, 2)
	if err != nil {
		t.Fatalf("Set across an outage longer than the retry policy: %v", err)
	}
	v, got, err := runtime.NewConfig(connect(t, srv.Servers()), p, runtime.JSONCodec[int]()).Get(ctx)
	if err != nil || v != 2 || got != ver {
		t.Fatalf("the node holds %d at version %d (%v); Set said version %d", v, got, err, ver)
	}
}

// Lock: a create whose reply was lost is found by its GUID. Before, the
// search was bounded by the policy: Lock failed while the session kept
// the node it had made, an orphan that held the lock for nobody until the
// session ended.
func TestLockCreateOutlastsRetryPolicy(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	px := zktest.NewProxy(t, srv.Addr())
	p := runtime.At(testRoot(t)).Lit("lock")
	l := runtime.NewLock(shortPolicySession(t, px), p)
	outageAfter(ctx, px, zktest.OpCreate)
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("Lock across an outage longer than the retry policy: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	admin := connect(t, srv.Servers())
	kids, err := admin.Children(ctx, p.String())
	if err != nil || len(kids) != 0 {
		t.Fatalf("after Unlock the lock has %v (%v); want no node", kids, err)
	}
}
