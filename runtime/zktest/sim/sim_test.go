package sim_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// connect opens a go-zookeeper connection to srv over TCP and waits for
// its session.
func connect(t *testing.T, srv *sim.Server) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{srv.Addr()}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, ev, zk.StateHasSession)
	return c, ev
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func waitState(t *testing.T, ev <-chan zk.Event, want zk.State) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v within 10s", want)
		}
	}
}

func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Four-letter words: ruok, and wchp listing a watch by path.
func TestFourLetterWords(t *testing.T) {
	srv := sim.Start(t)
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "imok" {
		t.Fatalf("ruok = %q", got)
	}
	c, _ := connect(t, srv)
	if _, _, _, err := c.ExistsW("/watched"); err != nil {
		t.Fatal(err)
	}
	if got := fourLetter(t, srv.Addr(), "wchp"); !strings.HasPrefix(got, "/watched\n\t0x") {
		t.Fatalf("wchp = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Fatalf("srvr = %q", got)
	}
}

// A listener on anything but a loopback address is refused.
func TestListenLoopbackOnly(t *testing.T) {
	srv := sim.New()
	defer srv.Close()
	if err := srv.Listen("0.0.0.0:0"); err == nil {
		t.Fatal("Listen on 0.0.0.0 succeeded")
	}
}

// A client whose connection is cut reconnects to its live session: same
// session id, its ephemeral node kept, and a watch whose event it missed
// while away fires on reconnection (setWatches).
func TestReconnectKeepsSession(t *testing.T) {
	srv := sim.New()
	defer srv.Close()
	var conns []net.Conn
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := srv.Dial(network, addr, timeout)
		conns = append(conns, nc)
		return nc, err
	}
	c, ev, err := zk.Connect([]string{"127.0.0.1:1"}, 4*time.Second, zk.WithDialer(dial), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitState(t, ev, zk.StateHasSession)
	id := c.SessionID()
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.GetW("/e")
	if err != nil {
		t.Fatal(err)
	}
	// Another client changes /e while the first is away.
	other, _, err := zk.Connect([]string{"127.0.0.1:1"}, 4*time.Second, zk.WithDialer(srv.Dial), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conns[len(conns)-1].Close()
	waitState(t, ev, zk.StateDisconnected)
	if _, err := other.Set("/e", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	waitState(t, ev, zk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session %x after reconnecting, was %x", c.SessionID(), id)
	}
	select {
	case e := <-w:
		if e.Type != zk.EventNodeDataChanged {
			t.Fatalf("missed event = %v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the missed data change never fired")
	}
}

// An expired session's ephemerals go at once (their watches fire), and its
// client is told on reconnection: ErrSessionExpired.
func TestExpireSession(t *testing.T) {
	srv := sim.Start(t)
	c, ev := connect(t, srv)
	obs, _ := connect(t, srv)
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := obs.ExistsW("/e")
	if err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()
	if !srv.ExpireSession(id) {
		t.Fatal("not live")
	}
	if e := <-w; e.Type != zk.EventNodeDeleted {
		t.Fatalf("event %v", e)
	}
	waitState(t, ev, zk.StateExpired)
	// go-zookeeper then opens a new session by itself.
	waitState(t, ev, zk.StateHasSession)
	if c.SessionID() == id || srv.ExpireSession(id) {
		t.Fatalf("session %x still live after its expiry", id)
	}
}

// A request longer than jute.maxbuffer closes the connection, as
// ZooKeeper does; nothing is created.
func TestMaxBuffer(t *testing.T) {
	srv := sim.Start(t)
	c, _ := connect(t, srv)
	_, err := c.Create("/big", make([]byte, 0x100000), 0, zk.WorldACL(zk.PermAll))
	if err == nil {
		t.Fatal("a 1 MiB create succeeded")
	}
	obs, _ := connect(t, srv)
	if ok, _, err := obs.Exists("/big"); ok || err != nil {
		t.Fatalf("/big exists %v, %v", ok, err)
	}
	if errors.Is(err, zk.ErrNoServer) {
		t.Log(err)
	}
}
