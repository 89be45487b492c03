package zktest_test

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

func TestEnsemble(t *testing.T) {
	start := time.Now()
	e := zktest.StartEnsemble(t, 3)
	t.Logf("3-server ensemble serving after %v", time.Since(start))
	if e.Size() != 3 || len(e.Servers()) != 3 {
		t.Fatalf("Size %d, Servers %v", e.Size(), e.Servers())
	}
	leader := e.Leader()
	if leader < 0 {
		t.Fatal("no leader after StartEnsemble")
	}
	for i := 0; i < e.Size(); i++ {
		mode, err := zktest.Mode(e.Server(i).Addr(), 5*time.Second)
		want := "follower"
		if i == leader {
			want = "leader"
		}
		if err != nil || mode != want {
			t.Fatalf("server %d mode %q, %v; want %s", i, mode, err, want)
		}
	}

	// Without WithQuorumFaults the servers talk to each other directly
	// (which shows that directConns, as the partition tests use it, sees
	// such connections), and there is nothing to partition.
	if conns, err := directConns(e); err == nil && len(conns) == 0 {
		t.Fatal("directConns found no connection between the servers")
	}
	if err := e.Isolate(leader); err == nil {
		t.Fatal("Isolate succeeded on an ensemble without WithQuorumFaults")
	}

	// A write on one member is visible on another.
	a := connect(t, []string{e.Server(0).Addr()}, 10*time.Second)
	b := connect(t, []string{e.Server(1).Addr()}, 10*time.Second)
	path := uniquePath(t)
	create(t, a, path, []byte("replicated"), 0)
	if _, err := b.Sync(path); err != nil {
		t.Fatalf("sync on server 1: %v", err)
	}
	if data, _, err := b.Get(path); err != nil || string(data) != "replicated" {
		t.Fatalf("get on server 1 = %q, %v", data, err)
	}

	// Without the leader the other two elect a new one and serve.
	oldPID := e.Server(leader).PID()
	if err := e.Server(leader).Stop(); err != nil {
		t.Fatalf("stopping leader %d: %v", leader, err)
	}
	assertGone(t, oldPID)
	newLeader, err := e.WaitQuorum(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == leader {
		t.Fatalf("stopped server %d is still the leader", leader)
	}
	var rest []string
	for i := 0; i < e.Size(); i++ {
		if i != leader {
			rest = append(rest, e.Server(i).Addr())
		}
	}
	w := connect(t, rest[:1], 10*time.Second)
	r := connect(t, rest[1:], 10*time.Second)
	create(t, w, path+"-after", []byte("two of three"), 0)
	if _, err := r.Sync(path + "-after"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if data, _, err := r.Get(path + "-after"); err != nil || string(data) != "two of three" {
		t.Fatalf("get after leader loss = %q, %v", data, err)
	}

	// The old leader rejoins with the same address and catches up.
	if err := e.Server(leader).Start(); err != nil {
		t.Fatalf("restarting server %d: %v", leader, err)
	}
	if _, err := e.WaitQuorum(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	back := connect(t, []string{e.Server(leader).Addr()}, 10*time.Second)
	if _, err := back.Sync(path + "-after"); err != nil {
		t.Fatalf("sync on rejoined server: %v", err)
	}
	if data, _, err := back.Get(path + "-after"); err != nil || string(data) != "two of three" {
		t.Fatalf("get on rejoined server = %q, %v", data, err)
	}
	t.Logf("ensemble test body took %v", time.Since(start))
}
