package runtime_test

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Against a 3-server ensemble, kill the server a client is connected to,
// and then the ensemble's leader, in the middle of a contended lock run:
// sessions survive, the run goes on, nobody overlaps, tokens keep growing,
// and nothing is left behind.
func TestLockEnsembleFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	ens := zktest.StartEnsemble(t, 3)
	dir := testRoot(t)
	ctx := testCtx(t, 4*time.Minute)
	const clients, phase = 4, 60

	sessions := make([]*runtime.Session, clients)
	for i := range sessions {
		sessions[i] = connect(t, ens.Servers(), runtime.WithSessionTimeout(8*time.Second))
	}
	var inside, overlaps atomic.Int32
	var mu sync.Mutex
	var tokens []int64
	var retries atomic.Int32
	done := make(chan struct{})
	progress := make(chan struct{}, 1<<16)
	var wg sync.WaitGroup
	for _, s := range sessions {
		l := runtime.NewLock(s, runtime.At(dir))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := l.Lock(ctx); err != nil {
					if errors.Is(err, runtime.ErrSessionExpired) || ctx.Err() != nil {
						t.Errorf("Lock: %v", err)
						return
					}
					retries.Add(1) // recoverable trouble during the failover: try again
					continue
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				inside.Add(-1)
				for {
					err := l.Unlock(ctx)
					if err == nil {
						break
					}
					if errors.Is(err, runtime.ErrNotHeld) {
						break // a retried Unlock whose first attempt went through
					}
					if errors.Is(err, runtime.ErrLockLost) || ctx.Err() != nil {
						t.Errorf("Unlock: %v", err)
						return
					}
					retries.Add(1)
				}
				progress <- struct{}{}
			}
		}()
	}
	wait := func(n int) {
		for i := 0; i < n; i++ {
			select {
			case <-progress:
			case <-ctx.Done():
				t.Fatalf("stalled after %d of %d cycles", i, n)
			}
		}
	}
	serverOf := func(addr string) int {
		return slices.Index(ens.Servers(), addr)
	}

	wait(phase)
	victim := serverOf(sessions[0].Conn().Server())
	if victim < 0 {
		t.Fatalf("client 0 is connected to %q, not an ensemble member", sessions[0].Conn().Server())
	}
	t.Logf("killing server %d (client 0's)", victim)
	if err := ens.Server(victim).Stop(); err != nil {
		t.Fatal(err)
	}
	wait(phase)
	if err := ens.Server(victim).Start(); err != nil {
		t.Fatal(err)
	}
	leader, err := ens.WaitQuorum(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing the leader, server %d", leader)
	if err := ens.Server(leader).Stop(); err != nil {
		t.Fatal(err)
	}
	wait(phase)
	close(done)
	wg.Wait()

	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping holders", n)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("token %d after %d", tokens[i], tokens[i-1])
		}
	}
	for i, s := range sessions {
		if err := s.Err(); err != nil {
			t.Fatalf("session %d did not survive: %v", i, err)
		}
	}
	t.Logf("%d cycles, %d retried calls", len(tokens), retries.Load())
	if kids := childrenOf(t, sessions[1], dir); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}
