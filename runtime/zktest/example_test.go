package zktest_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// StartProcess is the TestMain entry: one server for every test of a
// package, closed after m.Run. Tests then call zktest.Shared(t, srv, err).
func ExampleStartProcess() {
	srv, err := zktest.StartProcess(zktest.WithSessionTimeouts(400*time.Millisecond, 30*time.Second))
	if errors.Is(err, zktest.ErrNotInstalled) {
		fmt.Println("no ZooKeeper here:", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer srv.Close()

	conn, _, err := zk.Connect(srv.Servers(), 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer conn.Close()
	_, _ = conn.Create("/app", nil, 0, zk.WorldACL(zk.PermAll))
}

// A proxy between client and server makes the server execute a request
// whose reply the client never sees.
func ExampleListenProxy() {
	srv, err := zktest.StartProcess()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer srv.Close()
	p, err := zktest.ListenProxy(srv.Addr())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer p.Close()

	conn, _, err := zk.Connect([]string{p.Addr()}, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer conn.Close()
	fired := p.CutAfterRequest(zktest.OpCreate)
	_, err = conn.Create("/maybe", nil, 0, zk.WorldACL(zk.PermAll))
	<-fired
	fmt.Println(errors.Is(err, zk.ErrConnectionClosed)) // yet /maybe exists on the server
}

// Isolating the leader of an ensemble from the other servers: the other two
// elect a leader between themselves and keep serving, the old leader stops
// serving, and after Heal it rejoins as a follower. Only traffic between
// servers is cut; clients keep reaching their servers. In a test, use
// StartEnsemble(t, 3, zktest.WithQuorumFaults()), which also cleans up.
func ExampleEnsemble_Isolate() {
	e, err := zktest.StartEnsembleProcess(3, zktest.WithQuorumFaults())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer e.Close()
	old := e.Leader()

	if err := e.Isolate(old); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	// Waits for a leader among the majority and for the old one to stop
	// serving.
	leader, err := e.WaitQuorum(30 * time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	_, err = zktest.Mode(e.Server(old).Addr(), time.Second)
	fmt.Println(leader != old, errors.Is(err, zktest.ErrNotServing))

	// Writes go to the majority meanwhile.
	conn, _, err := zk.Connect([]string{e.Server(leader).Addr()}, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer conn.Close()
	_, _ = conn.Create("/during", []byte("partition"), 0, zk.WorldACL(zk.PermAll))

	if err := e.Heal(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if _, err := e.WaitQuorum(30 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	mode, _ := zktest.Mode(e.Server(old).Addr(), time.Second)
	fmt.Println(mode)
}

// The body of a TestMain whose package has examples with an Output comment
// that use the shared server: without ZooKeeper (outside CI) or under
// -short, m.Run skips them, as Shared skips the tests.
func ExampleExamplesNeedServer() {
	var m *testing.M // TestMain's argument

	srv, err := zktest.StartProcess()
	zktest.ExamplesNeedServer(err)
	code := m.Run()
	if srv != nil {
		srv.Close()
	}
	os.Exit(code)
}
