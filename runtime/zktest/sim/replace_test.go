package sim_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// A server that leaves answers no more at its address and its name
// resolves to nothing; when it joins again it is at a new address, its
// name resolves there, and it has caught up with what was committed while
// it was away.
func TestLeaveJoinNewAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		ctx := context.Background()
		old := srv.Servers()
		name, _, _ := net.SplitHostPort(srv.Hosts()[1])
		if ips, err := srv.LookupHost(ctx, name); err != nil || len(ips) != 1 || net.JoinHostPort(ips[0], "2181") != old[1] {
			t.Fatalf("%s resolves to %v, %v; its address is %s", name, ips, err, old[1])
		}
		c, _ := dialOnly(t, srv, old[0])
		defer c.Close()

		srv.LeaveServer(1)
		var dnsErr *net.DNSError
		if ips, err := srv.LookupHost(ctx, name); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Fatalf("%s resolves to %v, %v while its server is away", name, ips, err)
		}
		if nc, err := srv.Dial("tcp", old[1], time.Second); err == nil {
			nc.Close()
			t.Fatalf("the address %s of the server that left answered", old[1])
		}
		if _, err := c.Create("/while-away", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := srv.JoinServer(1); err != nil {
			t.Fatal(err)
		}
		now := srv.Servers()
		if now[1] == old[1] || !slices.Equal([]string{now[0], now[2]}, []string{old[0], old[2]}) {
			t.Fatalf("addresses %v after server 1 joined again (before %v)", now, old)
		}
		if ips, err := srv.LookupHost(ctx, name); err != nil || len(ips) != 1 || net.JoinHostPort(ips[0], "2181") != now[1] {
			t.Fatalf("%s resolves to %v, %v; its new address is %s", name, ips, err, now[1])
		}
		if nc, err := srv.Dial("tcp", old[1], time.Second); err == nil {
			nc.Close()
			t.Fatalf("the old address %s answers again", old[1])
		}
		if mode := srvrMode(t, srv, now[1]); mode != "follower" { // Dial's fallback would reach the leader
			t.Fatalf("%s is a %s: not server 1", now[1], mode)
		}
		moved, _ := dialOnly(t, srv, now[1])
		defer moved.Close()
		if ok, _, err := moved.Exists("/while-away"); !ok || err != nil {
			t.Fatalf("the server that joined again lacks what was created while it was away: %v, %v", ok, err)
		}
		if srv.JoinServer(1) == nil {
			t.Fatal("a server that has not left joined again")
		}
	})
}

// The quorum rule: with one of three servers cut off and another gone,
// nobody serves — not even the one left, whatever address a client
// tries — and no session expires, however long it lasts. Once a majority
// is back, the client reconnects to its session, ephemeral intact.
func TestNoQuorumNoService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // let closing goroutines end (virtual)
		srv := sim.NewEnsemble(3)
		defer srv.Close()
		addrs := srv.Servers()
		c, ev := dialOnly(t, srv, addrs[0])
		defer c.Close()
		if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		id := c.SessionID()

		srv.IsolateServer(1, true)
		if _, _, err := c.Exists("/e"); err != nil { // two of three: it serves
			t.Fatalf("with a majority up: %v", err)
		}
		srv.LeaveServer(2)
		waitState(t, ev, zk.StateDisconnected)
		other, _, err := zk.Connect([]string{addrs[0]}, 4*time.Second, zk.WithDialer(srv.Dial), zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		time.Sleep(20 * time.Second) // five session timeouts without a quorum
		if st := other.State(); st == zk.StateHasSession {
			t.Fatal("a new client got a session without a quorum")
		}
		if got := srv.Sessions(); !slices.Contains(got, id) {
			t.Fatalf("sessions without a quorum: %x; %x expired", got, id)
		}
		if err := srv.JoinServer(2); err != nil {
			t.Fatal(err)
		}
		waitState(t, ev, zk.StateHasSession)
		ok, st, err := c.Exists("/e")
		if err != nil || !ok || st.EphemeralOwner != id || c.SessionID() != id {
			t.Fatalf("with a quorum back: exists %v, owner %x, session %x (want %x), %v", ok, st.EphemeralOwner, c.SessionID(), id, err)
		}
	})
}

// srvrMode asks the server at addr, in memory, its mode (srvr).
func srvrMode(t *testing.T, srv *sim.Server, addr string) string {
	t.Helper()
	nc, err := srv.Dial("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("srvr")); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, mode, _ := strings.Cut(string(b), "Mode: ")
	mode, _, _ = strings.Cut(mode, "\n")
	return mode
}
