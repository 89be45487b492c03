package sim_test

import (
	"net"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// planRun has one client make 60 requests on a server made with opts,
// each tried once, and returns the random faults that fired, as "ID
// kind".
func planRun(t *testing.T, opts ...sim.Option) []string {
	var got []string
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.NewEnsemble(1, opts...)
		defer srv.Close()
		c, ev, err := zk.Connect(srv.Servers(), 4*time.Second, zk.WithLogger(quiet{}),
			zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
				return srv.Dial(network, addr, timeout)
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		waitState(t, ev, zk.StateHasSession)
		for range 60 {
			_, _ = c.Create("/n-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		}
		for _, f := range srv.FaultLog() {
			got = append(got, f.ID+" "+f.Kind)
		}
	})
	return got
}

// A saved fault log given back as a plan (WithFaultPlan) fires the same
// faults at the same places, whatever the seed now draws; a plan of one
// fault fires that one alone.
func TestFaultPlanFiresTheSavedFaults(t *testing.T) {
	saved := planRun(t, sim.WithRandomFaults(7, 0.15))
	if len(saved) < 2 {
		t.Fatalf("seed 7 drew %d faults in 60 requests; the test wants 2 or more", len(saved))
	}
	other := planRun(t, sim.WithRandomFaults(8, 0.15))
	if slices.Equal(other, saved) {
		t.Fatalf("seeds 7 and 8 drew the same faults: %v", saved)
	}
	plan := make([]sim.Fault, len(saved))
	for i, s := range saved {
		var f sim.Fault
		f.ID, f.Kind, _ = strings.Cut(s, " ")
		plan[i] = f
	}
	if got := planRun(t, sim.WithRandomFaults(8, 0.15), sim.WithFaultPlan(plan)); !slices.Equal(got, saved) {
		t.Errorf("seed 8 with seed 7's plan fired %v; the plan is %v", got, saved)
	}
	if got := planRun(t, sim.WithFaultPlan(plan[1:2])); !slices.Equal(got, saved[1:2]) {
		t.Errorf("a plan of %v fired %v", saved[1:2], got)
	}
}
