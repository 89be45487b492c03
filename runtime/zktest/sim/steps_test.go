package sim_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// stepsRun starts clients named names on a server made with opts, one
// after the other, then has them all create a sequential node at one
// virtual instant, and returns the node each got and the server's steps.
func stepsRun(t *testing.T, names []string, opts ...sim.Option) (map[string]string, uint64) {
	got := map[string]string{}
	var steps uint64
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.NewEnsemble(1, opts...)
		defer srv.Close()
		conns := map[string]*zk.Conn{}
		for _, n := range names {
			d := srv.DialerFor(n)
			c, ev, err := zk.Connect(srv.Servers(), 4*time.Second, zk.WithLogger(quiet{}),
				zk.WithDialer(func(network, addr string, _ time.Duration) (net.Conn, error) {
					return d(context.Background(), network, addr)
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			waitState(t, ev, zk.StateHasSession)
			conns[n] = c
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, n := range names {
			wg.Go(func() {
				p, err := conns[n].Create("/n-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				got[n] = p
				mu.Unlock()
			})
		}
		wg.Wait()
		steps = srv.Steps()
	})
	return got, steps
}

// A stepped server (WithSteps) serves what clients send at one virtual
// instant in the order of the clients' names (DialerFor), whatever order
// their goroutines ran in, and takes the same steps on every run: three
// clients that create sequential nodes at once get their sequence numbers
// in name order, ten runs of ten.
func TestStepsOrderClientsByName(t *testing.T) {
	names := []string{"a", "b", "c"}
	var first uint64
	for run := range 10 {
		got, steps := stepsRun(t, names, sim.WithSteps())
		for i, n := range names {
			if want := fmt.Sprintf("/n-%010d", i); got[n] != want {
				t.Fatalf("run %d: client %s created %s, want %s (name order): %v", run, n, got[n], want, got)
			}
		}
		if run == 0 {
			first = steps
		} else if steps != first {
			t.Fatalf("run %d took %d steps, run 0 %d", run, steps, first)
		}
	}
}
