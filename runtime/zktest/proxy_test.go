package zktest_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

func TestProxyRelays(t *testing.T) {
	s := zktest.Start(t)
	p := zktest.NewProxy(t, s.Addr())
	if p.Target() != s.Addr() {
		t.Fatalf("Target() = %s", p.Target())
	}
	c := connect(t, []string{p.Addr()}, 5*time.Second)
	path := uniquePath(t)
	create(t, c, path, []byte("v1"), 0)
	create(t, c, path+"/child", nil, 0)
	if _, err := c.Set(path, []byte("v2"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	data, _, err := c.Get(path)
	if err != nil || string(data) != "v2" {
		t.Fatalf("get = %q, %v", data, err)
	}
	kids, _, err := c.Children(path)
	if err != nil || len(kids) != 1 || kids[0] != "child" {
		t.Fatalf("children = %v, %v", kids, err)
	}
	// Four-letter words pass through as plain bytes.
	if out, err := zktest.FourLetter(p.Addr(), "ruok", 5*time.Second); err != nil || out != "imok" {
		t.Fatalf("ruok through proxy = %q, %v", out, err)
	}
	// The proxy saw the session's credentials.
	sess, ok := p.Session(c.SessionID())
	if !ok || len(sess.Passwd) == 0 || sess.Timeout != 5*time.Second {
		t.Fatalf("Session(0x%x) = %+v, %v; all: %+v", c.SessionID(), sess, ok, p.Sessions())
	}
}

func TestProxyCutAllReconnects(t *testing.T) {
	s := zktest.Start(t)
	p := zktest.NewProxy(t, s.Addr())
	c := connect(t, []string{p.Addr()}, 5*time.Second)
	id, accepted := c.SessionID(), p.Accepted()

	p.CutAll()
	c.waitState(t, zk.StateDisconnected, 10*time.Second)
	c.waitState(t, zk.StateHasSession, 10*time.Second)
	if p.Accepted() <= accepted {
		t.Fatalf("client came back without a new proxy connection (accepted %d -> %d)", accepted, p.Accepted())
	}
	if c.SessionID() != id {
		t.Fatalf("session changed across the cut: 0x%x -> 0x%x", id, c.SessionID())
	}
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatalf("exists after reconnect: %v", err)
	}
}

func TestProxyCutAfterRequest(t *testing.T) {
	s := zktest.Start(t)
	p := zktest.NewProxy(t, s.Addr())
	c := connect(t, []string{p.Addr()}, 5*time.Second)
	direct := connect(t, s.Servers(), 5*time.Second)
	path := uniquePath(t)

	fired := p.CutAfterRequest(zktest.OpCreate)
	_, err := c.Create(path, []byte("x"), 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create through a cut connection = %v, want ErrConnectionClosed", err)
	}
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("CutAfterRequest trigger never fired")
	}
	// The server executed the create although the client never heard.
	ok, _, err := direct.Exists(path)
	if err != nil || !ok {
		t.Fatalf("%s on the server after the cut: exists=%v err=%v", path, ok, err)
	}
	// One-shot: the client reconnects and creates normally.
	c.waitState(t, zk.StateHasSession, 10*time.Second)
	create(t, c, path+"-again", nil, 0)
}

func TestProxyBlackholeExpiresSession(t *testing.T) {
	s := zktest.Start(t, zktest.WithSessionTimeouts(400*time.Millisecond, 10*time.Second))
	p := zktest.NewProxy(t, s.Addr())
	const sessionTimeout = time.Second
	c := connect(t, []string{p.Addr()}, sessionTimeout)
	direct := connect(t, s.Servers(), 10*time.Second)
	eph := uniquePath(t)
	create(t, c, eph, nil, zk.FlagEphemeral)

	p.Blackhole(true)
	// The server expires the session, deleting its ephemeral node.
	eventually(t, 15*time.Second, "ephemeral node removed by session expiry", func() (bool, error) {
		ok, _, err := direct.Exists(eph)
		return err == nil && !ok, err
	})
	p.Blackhole(false)
	c.waitState(t, zk.StateExpired, 15*time.Second)
}

func TestExpireSession(t *testing.T) {
	s := zktest.Start(t)
	p := zktest.NewProxy(t, s.Addr())
	c := connect(t, []string{p.Addr()}, 10*time.Second)
	direct := connect(t, s.Servers(), 10*time.Second)
	eph := uniquePath(t)
	create(t, c, eph, nil, zk.FlagEphemeral)

	sess, ok := p.Session(c.SessionID())
	if !ok {
		t.Fatalf("proxy did not record session 0x%x", c.SessionID())
	}
	zktest.ExpireSession(t, s.Servers(), sess.ID, sess.Passwd)
	if ok, _, err := direct.Exists(eph); err != nil || ok {
		t.Fatalf("ephemeral after ExpireSession: exists=%v err=%v", ok, err)
	}
	c.waitState(t, zk.StateExpired, 15*time.Second)

	// A dead session cannot be closed again.
	if err := zktest.CloseSession(s.Addr(), sess.ID, sess.Passwd, 5*time.Second); !errors.Is(err, zktest.ErrInvalidSession) {
		t.Fatalf("CloseSession on an expired session = %v, want ErrInvalidSession", err)
	}
}

// TestProxyFaults covers Reject, Pause, Delay and CutAfterBytes with
// four-letter words, and checks that Close leaves no goroutines behind.
func TestProxyFaults(t *testing.T) {
	s := zktest.Start(t)
	base := runtime.NumGoroutine()
	p, err := zktest.ListenProxy(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ruok := func() (string, error) { return zktest.FourLetter(p.Addr(), "ruok", 5*time.Second) }

	t.Run("Reject", func(t *testing.T) {
		p.Reject(true)
		if out, err := ruok(); err == nil && out == "imok" {
			t.Fatal("ruok answered through a rejecting proxy")
		}
		p.Reject(false)
		if out, err := ruok(); err != nil || out != "imok" {
			t.Fatalf("ruok after Reject(false) = %q, %v", out, err)
		}
	})

	t.Run("Pause", func(t *testing.T) {
		p.Pause(true)
		type result struct {
			out string
			err error
		}
		res := make(chan result, 1)
		go func() {
			out, err := ruok()
			res <- result{out, err}
		}()
		eventually(t, 5*time.Second, "paused connection accepted", func() (bool, error) {
			return p.Conns() == 1, nil
		})
		select {
		case r := <-res:
			t.Fatalf("paused proxy answered: %q, %v", r.out, r.err)
		default:
		}
		p.Pause(false)
		if r := <-res; r.err != nil || r.out != "imok" {
			t.Fatalf("ruok after Pause(false) = %q, %v", r.out, r.err)
		}
	})

	t.Run("Delay", func(t *testing.T) {
		const d = 300 * time.Millisecond
		p.Delay(d)
		start := time.Now()
		out, err := ruok()
		took := time.Since(start)
		p.Delay(0)
		if err != nil || out != "imok" {
			t.Fatalf("ruok with delay = %q, %v", out, err)
		}
		if took < 2*d { // once each way
			t.Fatalf("ruok took %v with a %v delay each way", took, d)
		}
	})

	t.Run("CutAfterBytes", func(t *testing.T) {
		fired := p.CutAfterBytes(2)
		if out, err := ruok(); err == nil && out == "imok" {
			t.Fatal("ruok answered although the connection was cut after 2 bytes")
		}
		select {
		case <-fired:
		case <-time.After(5 * time.Second):
			t.Fatal("CutAfterBytes trigger never fired")
		}
		if out, err := ruok(); err != nil || out != "imok" {
			t.Fatalf("ruok after the one-shot cut = %q, %v", out, err)
		}
	})

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	eventually(t, 5*time.Second, "proxy goroutines gone", func() (bool, error) {
		return runtime.NumGoroutine() <= base, nil
	})
}

// The proxy counts what crosses it: requests by opcode and watch
// notifications.
func TestProxyCounts(t *testing.T) {
	srv := zktest.Start(t)
	p := zktest.NewProxy(t, srv.Addr())
	conn := connect(t, []string{p.Addr()}, 4*time.Second)
	if _, err := conn.Create("/counted", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p.ResetCounts()
	_, _, w, err := conn.GetW("/counted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/counted", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	<-w
	c := p.Counts()
	if c.Requests[zktest.OpGetData] != 1 || c.Requests[zktest.OpSetData] != 1 || c.Total() != 2 || c.Notifications != 1 {
		t.Fatalf("counts %+v (total %d)", c, c.Total())
	}
}

// The proxy counts the bytes the client reads: a getData reply of 1000
// bytes of data is its frame (4-byte length, 16-byte reply header, 4-byte
// data length, the data, an 68-byte Stat), plus 20 bytes per ping reply.
func TestProxyCountsBytesRead(t *testing.T) {
	srv := zktest.Start(t)
	p := zktest.NewProxy(t, srv.Addr())
	conn := connect(t, []string{p.Addr()}, 4*time.Second)
	data := make([]byte, 1000)
	if _, err := conn.Create("/read", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p.ResetCounts()
	if _, _, err := conn.Get("/read"); err != nil {
		t.Fatal(err)
	}
	c := p.Counts()
	const want = 4 + 16 + 4 + 1000 + 68
	extra := c.BytesRead - want
	if pings := c.Requests[zktest.OpPing]; extra < 0 || extra%20 != 0 || extra > 20*pings {
		t.Fatalf("read %d bytes, want %d and 20 per ping reply (%d pings)", c.BytesRead, want, pings)
	}
	p.ResetCounts()
	if c := p.Counts(); c.BytesRead != 0 {
		t.Fatalf("read %d bytes after ResetCounts", c.BytesRead)
	}
}

// RepliesReach fires once the server has answered the n-th request of an
// opcode: after the reply, not when the request is sent, and also when a
// fault keeps the reply from the client.
func TestProxyRepliesReach(t *testing.T) {
	srv := zktest.Start(t)
	p := zktest.NewProxy(t, srv.Addr())
	conn := connect(t, []string{p.Addr()}, 4*time.Second)
	create(t, conn, "/answered", nil, 0)
	p.ResetCounts()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	first, second := p.RepliesReach(zktest.OpGetData, 1), p.RepliesReach(zktest.OpGetData, 2)
	if closed(first) {
		t.Fatal("RepliesReach(getData, 1) closed before any request")
	}
	if _, _, err := conn.Get("/answered"); err != nil {
		t.Fatal(err)
	}
	if !closed(first) || closed(second) {
		t.Fatalf("after one answered getData: first closed %v, second closed %v; want true, false", closed(first), closed(second))
	}
	if closed(p.RepliesReach(zktest.OpSetData, 1)) {
		t.Fatal("RepliesReach(setData, 1) closed with no setData sent")
	}
	// A request held in the proxy (a delay longer than the test) is
	// counted as sent and not as answered.
	p.Delay(time.Hour)
	go conn.Exists("/answered")
	<-p.RequestsReach(zktest.OpExists, 1)
	if closed(p.RepliesReach(zktest.OpExists, 1)) {
		t.Fatal("RepliesReach(exists, 1) closed for a request the server has not received")
	}
	p.Delay(0)
	conn = connect(t, []string{p.Addr()}, 4*time.Second) // the other one waits an hour
	held := p.HoldRepliesAfterRequest(zktest.OpSetData)
	go conn.Set("/answered", []byte("x"), -1) // its reply never reaches the client
	<-held
	<-p.RepliesReach(zktest.OpSetData, 1) // the server answered it
	direct := connect(t, []string{srv.Addr()}, 4*time.Second)
	if _, st, err := direct.Get("/answered"); err != nil || st.Version != 1 {
		t.Fatalf("the held setData did not execute: %v, %+v", err, st)
	}
}
