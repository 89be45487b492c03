// Package zktest runs real ZooKeeper servers for tests: a standalone server
// (Start), a replicated ensemble (StartEnsemble) that can be partitioned,
// and a fault-injecting proxy (NewProxy) that sits between a client and a
// server to cut, stall, delay or refuse its traffic. Nothing is mocked: the
// servers are Apache ZooKeeper JVMs listening on 127.0.0.1.
//
// # A server per test
//
//	func TestLock(t *testing.T) {
//		srv := zktest.Start(t) // skips (or fails under CI) if ZooKeeper is missing
//		conn, _, err := zk.Connect(srv.Servers(), 5*time.Second)
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer conn.Close()
//		// ... use conn; srv.Stop / srv.Restart control the process ...
//	}
//
// Start picks a free port, writes a zoo.cfg and a data directory of its own,
// launches the JVM and returns once the server answers ruok and serves. The
// cleanup it registers kills the process by PID, waits for it and removes
// the directory. Stop kills the server like a crash (SIGKILL); Start and
// Restart bring it back on the same port with the same data. The server's
// output goes to LogPath, and a failed start quotes the end of that log.
//
// Defaults suit tests: tickTime 200ms so sessions may be as short as 400ms
// (see WithTickTime, WithSessionTimeouts), a 128 MiB heap (WithHeapMB), a
// 60s start-up deadline (WithStartTimeout). A server starts in about half a
// second, a three-server ensemble in a second or two. An ensemble's members
// bring a rejoining server up to date with a snapshot
// (zookeeper.forceSnapshotSync), not a diff: ZooKeeper 3.8.0's diff sync
// loses transactions on servers killed and restarted under load. When an
// ensemble test fails, the members' own reports of a state that diverged
// from the leader's ("First digest mismatch", "Unexpected extra paths") are
// printed after their log tails.
//
// # One server for a whole package
//
// StartProcess and Close do the same without a testing.TB, for TestMain.
// Shared then ends each test the way Start would have if the server could
// not be started:
//
//	var (
//		srv    *zktest.Server
//		srvErr error
//	)
//
//	func TestMain(m *testing.M) {
//		srv, srvErr = zktest.StartProcess()
//		zktest.ExamplesNeedServer(srvErr) // if the package's examples use srv
//		code := m.Run()
//		if srv != nil {
//			srv.Close()
//		}
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		s := zktest.Shared(t, srv, srvErr)
//		// ... tests share the server: give each its own znode paths ...
//	}
//
// Examples have no testing.TB, so Shared cannot skip them: an example with
// an Output comment that uses srv would fail without ZooKeeper.
// ExamplesNeedServer makes m.Run skip the package's examples where Shared
// would skip its tests (ZooKeeper missing outside CI), and under -short.
//
// TestMain must reach Close: a test binary killed before that leaves no
// process behind on Linux (servers die with the test binary), but its
// temporary directory stays.
//
// # Faults
//
//	p := zktest.NewProxy(t, srv.Addr())
//	conn, _, _ := zk.Connect([]string{p.Addr()}, time.Second)
//	p.CutAll()                           // drop every connection; the client reconnects
//	fired := p.CutAfterRequest(zktest.OpCreate)
//	_, err := conn.Create(...)           // executed by the server, err is a connection error
//	<-fired
//	p.Blackhole(true)                    // partition: the session expires on the server
//	p.Refuse(zktest.OpAddWatch, true)    // answer addWatch as ZooKeeper 3.5: UNIMPLEMENTED, then close
//
// ExpireSession expires a session on the server directly: it attaches to the
// session with its id and password and closes it. go-zookeeper does not
// expose a session's password, but a Proxy records the credentials of every
// session made through it (Proxy.Session). Without a proxy, keep the client
// partitioned with Proxy.Blackhole for longer than the session timeout.
//
// # Partitions inside an ensemble
//
// With WithQuorumFaults, the servers of an ensemble reach each other only
// through relays in the test process, one per ordered pair of servers and
// per port (quorum and election), and Partition, Isolate and Heal cut and
// restore them. Clients keep their direct connections to their servers.
//
//	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
//	old := e.Leader()
//	e.Isolate(old)                       // or e.Partition([]int{0}, []int{1, 2})
//	leader, err := e.WaitQuorum(30 * time.Second)
//	// leader != old serves with the third member; old answers
//	// ErrNotServing (zktest.Mode) and has dropped its clients' connections
//	e.Heal()
//	e.WaitQuorum(30 * time.Second)       // old is a follower again, caught up
//
// A cut link closes its connections and refuses new ones, in both
// directions, so servers notice within a tick or so rather than after
// syncLimit. RollingRestart restarts every member in turn, the leader last,
// waiting each time for the restarted member to serve again.
//
// # Servers that join and leave
//
// With WithReconfig, an ensemble runs ZooKeeper's dynamic reconfiguration
// (reconfigEnabled=true, standaloneEnabled=false, each server listed with
// its client address) and changes its membership as an operator replaces
// servers one at a time:
//
//	e := zktest.StartEnsemble(t, 3, zktest.WithReconfig())
//	for old := range 3 {
//		if _, err := e.Join(); err != nil { // a new server, on new ports, added by reconfig
//			t.Fatal(err)
//		}
//		if err := e.Leave(old); err != nil { // removed by reconfig, then killed by PID
//			t.Fatal(err)
//		}
//	}
//	// e.Servers() now lists the three new servers only
//
// Remove takes a server out of the configuration and leaves it running:
// ZooKeeper lets a removed server go on serving its clients, as a
// non-voting follower, until it is stopped. The harness sends its reconfig
// requests as a superuser of its own; the servers' ACLs stay in force for
// the test's clients. Member indexes keep counting: Size includes the
// members that left, Servers does not.
//
// # TLS
//
// WithTLS gives a standalone server a TLS client port (ZooKeeper's
// secureClientPort, served by Netty) besides its plain one, with
// certificates made at test time by NewTLSCerts (or TLSCertsFor): a CA, a
// server certificate for 127.0.0.1 and localhost, a trusted and an
// untrusted client certificate, as PEM files and as tls.Configs. The client
// authentication mode is ClientAuthNone, ClientAuthWant or ClientAuthNeed,
// and the x509 authentication provider is on, so a client certificate's
// subject (ClientSubject) can be named in x509 ACLs:
//
//	certs := zktest.TLSCertsFor(t)
//	srv := zktest.Start(t, zktest.WithTLS(certs, zktest.ClientAuthNeed))
//	s, err := runtime.Connect(ctx, srv.TLSServers(), runtime.WithTLS(certs.ClientConfig()))
//
// # Environment
//
//   - ZK_SERVERS=host:port[,host:port...]: Start and StartProcess start
//     nothing and return a Server pointing there (External reports it;
//     RequireLocal skips tests that need to stop or restart the server).
//     StartEnsemble still needs local processes.
//   - ZK_CLASSPATH or ZOOKEEPER_HOME: where ZooKeeper is, instead of Debian's
//     /usr/share/java/zookeeper.jar (`apt-get install -y zookeeper`).
//     JAVA_HOME, if set, chooses the java binary; otherwise PATH does.
//   - CI=true: a missing ZooKeeper fails the test instead of skipping it.
package zktest
