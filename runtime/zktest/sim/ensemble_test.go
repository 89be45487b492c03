package sim_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// dialOnly connects a go-zookeeper client to the servers of srv listed in
// addrs, in memory, and waits for its session.
func dialOnly(t *testing.T, srv *sim.Server, addrs ...string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return dialWith(t, srv.Dial, addrs...)
}

// dialWith is dialOnly through dial.
func dialWith(t *testing.T, dial zk.Dialer, addrs ...string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 4*time.Second, zk.WithDialer(dial), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, ev, zk.StateHasSession)
	return c, ev
}

// A lagging follower: a read there may be stale (sequential consistency
// allows it), sync catches it up, its client's own write is answered once
// the follower has applied it, so the client's next read sees it, and its
// watches fire when it applies the change.
func TestEnsembleLaggingFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		addrs := srv.Servers()
		srv.SetDelay(1, time.Second)
		leader, _ := dialOnly(t, srv, addrs[0])
		defer leader.Close()
		follower, _ := dialOnly(t, srv, addrs[1])
		defer follower.Close()

		_, _, w, err := follower.ExistsW("/x")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := leader.Create("/x", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := follower.Exists("/x"); ok || err != nil {
			t.Fatalf("the lagging follower already has /x: %v, %v", ok, err)
		}
		if _, err := follower.Sync("/x"); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < time.Second {
			t.Fatalf("sync answered after %v, before the follower caught up (1s)", time.Since(start))
		}
		if ok, _, err := follower.Exists("/x"); !ok || err != nil {
			t.Fatalf("after sync the follower still lacks /x: %v, %v", ok, err)
		}
		select {
		case e := <-w:
			if e.Type != zk.EventNodeCreated {
				t.Fatalf("event %v", e)
			}
		default:
			t.Fatal("the follower's watch did not fire by the time it applied the create")
		}
		// Its own write: answered once applied, then read back at once.
		if _, err := follower.Set("/x", []byte("2"), -1); err != nil {
			t.Fatal(err)
		}
		if data, _, err := follower.Get("/x"); err != nil || string(data) != "2" {
			t.Fatalf("the follower's client read %q, %v after its own write", data, err)
		}
	})
}

// A client's requests are executed in the order it sent them, behind its
// pending writes: a read sent after a write sees the write, even when the
// write is executed from the requests that waited behind an earlier reply
// and its commit lets the lagging server apply another session's
// transaction (due at the same instant) before the write's own. The
// simulator once ran the read inside that commit, ahead of the write's
// wait, and answered from the server's older view: a consumer's release
// read its claim as absent and left it (ensemble-ackqueue seed
// 308197188, kept in TestSimFoundSeeds).
func TestEnsembleReadWaitsForWriteDrainedBehindReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		addrs := srv.Servers()
		srv.SetDelay(1, time.Second)
		leader, _ := dialOnly(t, srv, addrs[0])
		defer leader.Close()
		follower, _ := dialOnly(t, srv, addrs[1])
		defer follower.Close()
		acl := zk.WorldACL(zk.PermAll)

		errs := make(chan error, 2)
		go func() { _, err := follower.Create("/w1", nil, 0, acl); errs <- err }()
		synctest.Wait() // /w1 committed; its reply waits a second for the follower
		if _, err := leader.Create("/x", nil, 0, acl); err != nil {
			t.Fatal(err) // committed at the same instant, after /w1
		}
		go func() { _, err := follower.Create("/w2", nil, 0, acl); errs <- err }()
		synctest.Wait() // /w2 waits behind /w1's reply
		type seen struct {
			ok  bool
			err error
		}
		read := make(chan seen, 1)
		go func() { ok, _, err := follower.Exists("/w2"); read <- seen{ok, err} }()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if r := <-read; !r.ok || r.err != nil {
			t.Fatalf("Exists(/w2) sent after Create(/w2) = %v, %v; want true: a client's read sees its earlier write", r.ok, r.err)
		}
	})
}

// A client that has seen zxid z is refused by a server that has applied
// less (the zxid check on reconnect): moving from the leader to a lagging
// follower, it never sees its history go backwards. (Three servers: with
// two, cutting one off would leave no quorum.)
func TestEnsembleNoGoingBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		addrs := srv.Servers()
		var conns []net.Conn
		dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
			nc, err := srv.Dial(network, addr, timeout)
			conns = append(conns, nc)
			return nc, err
		}
		c, ev, err := zk.Connect([]string{addrs[0], addrs[1]}, 60*time.Second, zk.WithDialer(dial), zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		waitState(t, ev, zk.StateHasSession)
		if c.Server() != addrs[0] {
			// go-zookeeper picked the follower: move it to the leader.
			srv.IsolateServer(1, true)
			waitState(t, ev, zk.StateHasSession)
			srv.IsolateServer(1, false)
		}
		srv.SetDelay(1, 30*time.Second)
		if _, err := c.Create("/y", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		seen := srv.Zxid()
		start := time.Now()
		srv.IsolateServer(0, true) // its clients must move to the follower
		// The follower refuses it until it has applied what the client saw:
		// 30 s after the create (virtual time).
		for e := range ev {
			if e.State == zk.StateHasSession {
				break
			}
		}
		if waited := time.Since(start); waited < 29*time.Second {
			t.Fatalf("reconnected after %v, before the follower caught up", waited)
		}
		if srv.Applied(1) < seen {
			t.Fatalf("reconnected to a server at zxid %d, behind the %d the client had seen", srv.Applied(1), seen)
		}
		if ok, _, err := c.Exists("/y"); !ok || err != nil {
			t.Fatalf("after moving, /y is gone: %v, %v", ok, err)
		}
	})
}

// Isolating the only server a client may use: it cannot reconnect, and the
// leader expires its session on its own clock.
func TestEnsembleIsolatedServerExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		addrs := srv.Servers()
		c, ev := dialOnly(t, srv, addrs[2])
		defer c.Close()
		obs, _ := dialOnly(t, srv, addrs[0])
		defer obs.Close()
		if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, _, w, err := obs.ExistsW("/e")
		if err != nil {
			t.Fatal(err)
		}
		id := c.SessionID()
		srv.IsolateServer(2, true)
		if e := <-w; e.Type != zk.EventNodeDeleted {
			t.Fatalf("event %v", e)
		}
		if srv.ExpireSession(id) {
			t.Fatal("the session outlived its isolation")
		}
		srv.IsolateServer(2, false)
		waitState(t, ev, zk.StateExpired)
		if errors.Is(err, zk.ErrNoServer) {
			t.Log(err)
		}
	})
}

// A partition shorter than the client's read timeout: the request sent
// while the session was cut off (Isolate) is dropped, and on TCP a
// connection that lives on loses no bytes — so once the partition heals
// the connection breaks, and the client's request fails with a connection
// error instead of waiting forever for a reply that was never coming.
// (The simulation search found the hang: a TTL lease's renewal waited 30
// virtual minutes.)
func TestIsolateShortPartitionLosesNoReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.New()
		defer srv.Close()
		c, ev := dialOnly(t, srv, srv.Servers()[0])
		defer c.Close()
		if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		srv.Isolate(c.SessionID(), true)
		got := make(chan error, 1)
		go func() {
			_, _, err := c.Get("/x")
			got <- err
		}()
		time.Sleep(500 * time.Millisecond) // well within the 4 s session's read timeout
		srv.Isolate(c.SessionID(), false)
		select {
		case err := <-got:
			if err == nil {
				t.Fatal("a request dropped in the partition was answered")
			}
		case <-time.After(time.Minute):
			t.Fatal("the request sent during the partition never returned")
		}
		// The session lives on, on a new connection. Wait for it: with a
		// single server, go-zookeeper starts each reconnection by failing
		// the requests not yet sent with ErrNoServer (its host provider has
		// gone round the list), so a request made before the new
		// connection is up may fail that way.
		waitState(t, ev, zk.StateHasSession)
		if _, _, err := c.Get("/x"); err != nil {
			t.Fatalf("after the partition: %v", err)
		}
	})
}

// StartChaos: the same seed draws the same schedule on the same sessions;
// the events it recorded, forced as a Plan on a schedule of another seed,
// do the same; a spared session is never cut off; stop lets everything
// through again and brings back every server that left.
func TestStartChaos(t *testing.T) {
	var recorded []sim.ChaosEvent
	schedule := func(spareFirst bool, plan []sim.ChaosEvent) (log []string, spared int64) {
		synctest.Test(t, func(t *testing.T) {
			defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
			srv := sim.NewEnsemble(3)
			defer srv.Close()
			addrs := srv.Servers()
			// Servers are replaced at new addresses: the clients follow
			// each one from its first address to its present one.
			follow := func(network, addr string, timeout time.Duration) (net.Conn, error) {
				for i, a := range addrs {
					if a == addr {
						addr = srv.Servers()[i]
					}
				}
				return srv.Dial(network, addr, timeout)
			}
			a, _ := dialWith(t, follow, addrs[0])
			defer a.Close()
			b, _ := dialWith(t, follow, addrs[1])
			defer b.Close()
			if spareFirst {
				spared = a.SessionID()
			}
			recorded = nil
			seed := uint64(7)
			if plan != nil {
				seed = 8 // forced: the seed plays no part
			}
			stop := srv.StartChaos(sim.Chaos{Seed: seed, Events: 30,
				Spare:  func(id int64) bool { return id == spared },
				Log:    func(what string) { log = append(log, what) },
				Record: func(ev sim.ChaosEvent) { recorded = append(recorded, ev) },
				Plan:   plan})
			time.Sleep(2 * time.Minute)
			stop()
			if _, _, err := a.Exists("/"); err != nil {
				t.Fatalf("after stop: %v", err)
			}
		})
		return log, spared
	}
	first, _ := schedule(false, nil)
	plan := recorded
	again, _ := schedule(false, nil)
	if strings.Join(first, "\n") != strings.Join(again, "\n") || len(first) < 20 {
		t.Fatalf("the same seed drew different schedules:\n%v\n%v", first, again)
	}
	// Forced, under another seed, with one more event.
	forced, _ := schedule(false, append(plan[:len(plan):len(plan)], sim.ChaosEvent{After: time.Second, Fault: "server-cut", Server: 2, For: time.Second}))
	if got, want := strings.Join(forced, "\n"), strings.Join(first, "\n")+"\nchaos: server 2 cut off"; got != want {
		t.Fatalf("the recorded events, forced, did other things:\n%v\nwant\n%v", got, want)
	}
	for _, k := range []string{"lags", "cut off", "session", "leader", "leaves", "rolling"} {
		if !strings.Contains(strings.Join(first, "\n"), k) {
			t.Errorf("no %q fault in %d: %v", k, len(first), first)
		}
	}
	log, spared := schedule(true, nil)
	if strings.Contains(strings.Join(log, "\n"), fmt.Sprintf("session %x", spared)) {
		t.Fatalf("the spared session %x was cut off: %v", spared, log)
	}
}

// A leader election longer than the session timeout: nobody serves, the
// client's connection is closed and it cannot reconnect meanwhile, yet
// its session does not expire — the new leader starts every session's
// timeout afresh — so it reconnects to it afterwards, ephemeral intact.
func TestChangeLeaderKeepsSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		addrs := srv.Servers()
		c, _ := dialOnly(t, srv, addrs...)
		defer c.Close()
		if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		id := c.SessionID()
		srv.ChangeLeader(6 * time.Second) // the session's timeout is 4 s
		time.Sleep(3 * time.Second)
		if got := srv.Sessions(); len(got) != 1 || got[0] != id {
			t.Fatalf("sessions during the election: %x, want [%x]", got, id)
		}
		time.Sleep(4 * time.Second) // the client reconnects once a leader serves
		ok, st, err := c.Exists("/e")
		if err != nil || !ok || st.EphemeralOwner != id || c.SessionID() != id {
			t.Fatalf("after the election: exists %v, owner %x, session %x (want %x), %v", ok, st.EphemeralOwner, c.SessionID(), id, err)
		}
	})
}
