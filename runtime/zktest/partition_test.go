package zktest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// settle bounds each wait for the ensemble to react to a fault: a new
// election and a sync take well under a second here, so this only guards
// against a hang.
const settle = 30 * time.Second

// addrs returns the client addresses of the given members.
func addrs(e *zktest.Ensemble, members ...int) []string {
	var out []string
	for _, i := range members {
		out = append(out, e.Server(i).Addr())
	}
	return out
}

// others returns every member but i.
func others(e *zktest.Ensemble, i int) []int {
	var out []int
	for j := 0; j < e.Size(); j++ {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// assertNoDirectConns fails the test if two members are connected other
// than through the ensemble's relays.
func assertNoDirectConns(t *testing.T, e *zktest.Ensemble, when string) {
	t.Helper()
	conns, err := directConns(e)
	if err != nil {
		t.Logf("cannot list connections (%v); not checking that the relays are the only way between servers", err)
		return
	}
	if len(conns) > 0 {
		t.Fatalf("%s: servers connected directly, bypassing the relays: %v", when, conns)
	}
}

// assertNotServing fails the test unless member i runs, with the given
// pid, and answers on its client port that it does not serve.
func assertNotServing(t *testing.T, e *zktest.Ensemble, i, pid int) {
	t.Helper()
	if got := e.Server(i).PID(); got != pid {
		t.Fatalf("member %d: pid %d, want %d still running", i, got, pid)
	}
	if mode, err := zktest.Mode(e.Server(i).Addr(), 5*time.Second); !errors.Is(err, zktest.ErrNotServing) {
		t.Fatalf("member %d cut off from the majority: mode %q, %v; want ErrNotServing", i, mode, err)
	}
}

// assertMode fails the test unless member i serves in the given mode.
func assertMode(t *testing.T, e *zktest.Ensemble, i int, want string) {
	t.Helper()
	if mode, err := zktest.Mode(e.Server(i).Addr(), 5*time.Second); err != nil || mode != want {
		t.Fatalf("member %d: mode %q, %v; want %s", i, mode, err, want)
	}
}

// assertReads fails the test unless a new client of member i reads data at
// path, after a sync so that the read is not stale.
func assertReads(t *testing.T, e *zktest.Ensemble, i int, path, data string) {
	t.Helper()
	c := connect(t, addrs(e, i), 30*time.Second)
	if _, err := c.Sync(path); err != nil {
		t.Fatalf("sync %s on member %d: %v", path, i, err)
	}
	if got, _, err := c.Get(path); err != nil || string(got) != data {
		t.Fatalf("get %s on member %d = %q, %v; want %q", path, i, got, err, data)
	}
}

func TestPartitionIsolatedLeader(t *testing.T) {
	start := time.Now()
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	assertNoDirectConns(t, e, "after start")
	old, err := e.WaitQuorum(settle)
	if err != nil {
		t.Fatal(err)
	}
	oldPID := e.Server(old).PID()

	// Cut off from both followers, the leader loses its quorum and stops
	// serving; the followers elect a leader between themselves.
	if err := e.Isolate(old); err != nil {
		t.Fatal(err)
	}
	leader, err := e.WaitQuorum(settle)
	if err != nil {
		t.Fatal(err)
	}
	if leader == old {
		t.Fatalf("isolated member %d is still the leader", old)
	}
	assertNotServing(t, e, old, oldPID)
	assertMode(t, e, leader, "leader")
	assertNoDirectConns(t, e, "while the leader is isolated")

	// The majority serves writes.
	majority := connect(t, addrs(e, others(e, old)...), 30*time.Second)
	path := uniquePath(t)
	create(t, majority, path, []byte("written during the partition"), 0)

	// Healed, the old leader joins the new one as a follower and catches up.
	if err := e.Heal(); err != nil {
		t.Fatal(err)
	}
	healed, err := e.WaitQuorum(settle)
	if err != nil {
		t.Fatal(err)
	}
	if healed != leader {
		t.Fatalf("after healing member %d leads; want %d, the majority's leader, to keep leading", healed, leader)
	}
	assertMode(t, e, old, "follower")
	assertReads(t, e, old, path, "written during the partition")
	assertNoDirectConns(t, e, "after healing")
	t.Logf("took %v", time.Since(start))
}

func TestPartitionIsolatedFollower(t *testing.T) {
	start := time.Now()
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	leader, err := e.WaitQuorum(settle)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % e.Size()
	pid := e.Server(follower).PID()

	// The leader keeps its quorum with the other follower.
	if err := e.Isolate(follower); err != nil {
		t.Fatal(err)
	}
	after, err := e.WaitQuorum(settle)
	if err != nil {
		t.Fatal(err)
	}
	if after != leader {
		t.Fatalf("member %d leads after isolating follower %d; want %d to keep leading", after, follower, leader)
	}
	assertNotServing(t, e, follower, pid)

	majority := connect(t, addrs(e, others(e, follower)...), 30*time.Second)
	path := uniquePath(t)
	create(t, majority, path, []byte("first"), 0)
	if _, err := majority.Set(path, []byte("second"), -1); err != nil {
		t.Fatalf("set %s on the majority: %v", path, err)
	}

	if err := e.Heal(); err != nil {
		t.Fatal(err)
	}
	if after, err = e.WaitQuorum(settle); err != nil {
		t.Fatal(err)
	}
	if after != leader {
		t.Fatalf("member %d leads after healing; want %d", after, leader)
	}
	assertMode(t, e, follower, "follower")
	assertReads(t, e, follower, path, "second")
	t.Logf("took %v", time.Since(start))
}

func TestPartitionNoMajority(t *testing.T) {
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	for _, bad := range [][][]int{{{3}}, {{-1}}, {{0}, {0}}, {{0, 1, 0}}} {
		if err := e.Partition(bad...); err == nil {
			t.Fatalf("Partition(%v) succeeded; want an error", bad)
		}
	}

	// Three groups of one: no quorum anywhere, so nobody serves.
	if err := e.Partition([]int{0}, []int{1}, []int{2}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WaitQuorum(settle); err == nil {
		t.Fatal("WaitQuorum succeeded with no group holding a majority")
	}
	for i := 0; i < e.Size(); i++ {
		eventually(t, settle, "member cut off from all others stops serving", func() (bool, error) {
			_, err := zktest.Mode(e.Server(i).Addr(), 5*time.Second)
			return errors.Is(err, zktest.ErrNotServing), err
		})
	}

	// Two of them together again make a quorum: Partition replaces the
	// previous partition rather than adding to it.
	if err := e.Partition([]int{0, 1}); err != nil {
		t.Fatal(err)
	}
	leader, err := e.WaitQuorum(settle)
	if err != nil {
		t.Fatal(err)
	}
	if leader == 2 {
		t.Fatal("member 2, cut off, leads")
	}
	if err := e.Heal(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WaitQuorum(settle); err != nil {
		t.Fatal(err)
	}
}
