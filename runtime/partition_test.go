package runtime_test

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// Recipes on a 3-server ensemble whose servers are partitioned from each
// other (zktest.WithQuorumFaults) while clients stay connected to the server
// they chose. A client whose server list holds only the server cut off is on
// the minority side: that server stops serving and drops its connections,
// so the client's session runs on its own clock (liveness.go) until the
// majority expires it. Invariants are checked on instants recorded with one
// monotonic clock in the test process, never on durations.

// settleQuorum bounds each wait for the ensemble to settle after a fault:
// an election and a sync take well under a second here; this only guards
// against a hang on a loaded machine.
const settleQuorum = time.Minute

// minorityTimeout is the session timeout of a client cut off with its
// server: it is told of its loss at 80% of it, the majority expires it
// after all of it. Short, so that the tests take seconds; well above the
// ensemble's minimum (2 ticks, 400ms).
const minorityTimeout = 4 * time.Second

// survivorTimeout is the session timeout of clients that must outlive a
// partition or a leader election (they reconnect to another server).
const survivorTimeout = 20 * time.Second

// clock is the one monotonic clock of a test: instants since its start.
type clock struct{ start time.Time }

func newClock() *clock { return &clock{start: time.Now()} }

func (c *clock) now() time.Duration { return time.Since(c.start) }

// memberAddrs returns the client addresses of the given members.
func memberAddrs(e *zktest.Ensemble, members ...int) []string {
	var out []string
	for _, i := range members {
		out = append(out, e.Server(i).Addr())
	}
	return out
}

// othersThan returns every member but i.
func othersThan(e *zktest.Ensemble, i int) []int {
	var out []int
	for j := range e.Size() {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// follower returns a member that serves as a follower.
func follower(t *testing.T, e *zktest.Ensemble) int {
	t.Helper()
	leader, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatal(err)
	}
	return (leader + 1) % e.Size()
}

// isolate cuts member x off from the others and waits until the majority
// serves without it (and x refuses to serve). It returns the majority's
// leader. The partition is healed at the end of the test at the latest.
func isolate(t *testing.T, e *zktest.Ensemble, x int) int {
	t.Helper()
	if err := e.Isolate(x); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Heal() })
	leader, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatalf("after isolating member %d: %v", x, err)
	}
	if leader == x {
		t.Fatalf("isolated member %d still leads", x)
	}
	return leader
}

// heal ends the partition and waits until every member serves again, one
// of them as the leader.
func heal(t *testing.T, e *zktest.Ensemble) int {
	t.Helper()
	if err := e.Heal(); err != nil {
		t.Fatal(err)
	}
	leader, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatalf("after healing: %v", err)
	}
	return leader
}

// requireEmptyEverywhere fails the test unless dir has no children as seen
// from every member, each read after a sync: nothing orphaned, and every
// member caught up.
func requireEmptyEverywhere(t *testing.T, e *zktest.Ensemble, dir string) {
	t.Helper()
	for i := range e.Size() {
		s := connect(t, memberAddrs(e, i))
		if _, err := s.Conn().Sync(dir); err != nil {
			t.Fatalf("sync %s on member %d: %v", dir, i, err)
		}
		if kids := childrenOf(t, s, dir); len(kids) != 0 {
			t.Fatalf("member %d: left under %s: %v", i, dir, kids)
		}
		s.Close()
	}
}
