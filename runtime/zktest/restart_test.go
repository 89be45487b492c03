package zktest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

func TestRollingRestart(t *testing.T) {
	start := time.Now()
	e := zktest.StartEnsemble(t, 3)
	pids := make([]int, e.Size())
	for i := range pids {
		pids[i] = e.Server(i).PID()
	}

	// A session through any member, with an ephemeral node, watched by
	// another session. The watch is not on the sampling session:
	// go-zookeeper v1.0.4 reads its last zxid for the re-sent watches
	// while its receive loop writes it, without a lock (its issues #35
	// and samuel/go-zookeeper#178, #260), so a session that holds a
	// watch and has a reply in flight at a reconnection races inside
	// the library; the race detector failed this test on it once.
	c := connect(t, e.Servers(), 15*time.Second)
	session := c.SessionID()
	path := uniquePath(t)
	create(t, c, path, nil, zk.FlagEphemeral)
	ok, _, watch, err := connect(t, e.Servers(), 15*time.Second).ExistsW(path)
	if err != nil || !ok {
		t.Fatalf("exists %s = %v, %v", path, ok, err)
	}

	// Sample the node from the session throughout the restart. Calls made
	// while the client reconnects fail; every one that succeeds must see
	// the node.
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		seen, missing int
		stop          = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond): // sampling period, not synchronisation
			}
			ok, _, err := c.Exists(path)
			if err != nil {
				continue
			}
			mu.Lock()
			seen++
			if !ok {
				missing++
			}
			mu.Unlock()
		}
	}()
	leader, err := e.RollingRestart(settle)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, pid := range pids {
		if e.Server(i).PID() == pid {
			t.Fatalf("member %d was not restarted (pid %d)", i, pid)
		}
	}
	assertMode(t, e, leader, "leader")

	if missing > 0 {
		t.Fatalf("the session missed its ephemeral node in %d of %d reads", missing, seen)
	}
	if got := c.SessionID(); got != session {
		t.Fatalf("session %#x replaced by %#x", session, got)
	}
	select {
	case ev := <-watch:
		t.Fatalf("watch on the ephemeral node fired: %+v", ev)
	default:
	}
	disconnects := 0
drain:
	for {
		select {
		case ev := <-c.events:
			switch ev.State {
			case zk.StateExpired:
				t.Fatal("the session expired during the rolling restart")
			case zk.StateDisconnected:
				disconnects++
			}
		default:
			break drain
		}
	}
	if disconnects == 0 {
		t.Fatal("the client never lost its server, though every member was restarted")
	}
	if ok, _, err := c.Exists(path); err != nil || !ok {
		t.Fatalf("after the rolling restart exists %s = %v, %v", path, ok, err)
	}
	t.Logf("%d reads saw the node across %d disconnections; took %v", seen, disconnects, time.Since(start))
}
