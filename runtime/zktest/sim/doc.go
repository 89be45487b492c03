// Package sim is a ZooKeeper server in the test process, for tests only.
//
// It speaks ZooKeeper's wire protocol, so every client works against it
// unchanged: go-zookeeper (and the runtime package) through Dial on
// in-memory connections (zk.WithDialer, runtime.WithDialer), and other
// processes (Curator, kazoo, zkgen inspect) through a TCP listener on a
// loopback address (Start, Listen).
//
//	srv := sim.Start(t) // 127.0.0.1, a free port; closed when the test ends
//	s, err := runtime.Connect(ctx, srv.Servers())
//
// What it implements, with ZooKeeper 3.8's semantics: sessions (timeout
// negotiation, password, reconnection to a live session, expiry on the
// server's clock, closeSession), create, create2, createContainer and
// createTTL with every create mode (sequence numbers from the parent's
// cversion, ten digits), delete, exists, getData, setData, getChildren and
// getChildren2, getACL and setACL, check, multi (atomic, with ZooKeeper's
// per-op results: OK before the failing op, its error, then runtime
// inconsistency), sync, ping, setWatches and setWatches2, addAuth with the
// digest scheme and ACL checks (world, digest, ip, auth), the full Stat,
// one-shot data, exist and child watches and persistent (recursive)
// watches (addWatch, checkWatches, removeWatches), delivered in
// transaction order, before the reply of any later request on the same
// connection, and only to a watcher that may read the node,
// ephemeral nodes removed when their session ends, container and TTL nodes
// reaped on a timer, jute.maxbuffer on requests, and the error codes.
// A failed write consumes a zxid, as ZooKeeper's error transactions do.
//
// Faults on command (ExpireSession, Isolate, CutConnection,
// CutBeforeRequest, CutAfterRequest, HoldRepliesAfterRequest, SetDelay,
// IsolateServer, ChangeLeader, LeaveServer and JoinServer) and at random
// from a seed: WithRandomFaults for requests, StartChaos for sessions and
// servers (ChaosFaults lists them). Started inside a testing/synctest bubble,
// it runs on the bubble's virtual time, with the clients there: session
// expiries and TTLs take no wall time.
//
// NewEnsemble and StartEnsemble make several servers over one state, each
// applying the committed transactions to its own view after its own delay
// (SetDelay: a lagging follower, whose reads may be stale as ZooKeeper's
// sequential consistency allows; sync catches it up) or not at all while
// cut off (IsolateServer); a client that has seen more than a server has
// applied is refused there (see member.go). A server may leave and join
// again at a new address under its name (LeaveServer, JoinServer), as a
// Kubernetes pod rescheduled: clients given Hosts, with LookupHost as
// their resolver, follow it. While a majority of the servers have left or
// are cut off, nobody serves and no session expires (see replace.go).
//
// It refuses to be anything but a test server: it listens on loopback
// addresses only, keeps nothing on disk, and has no quorum protocol (an
// election is a pause of the whole ensemble, ChangeLeader; a quorum is a
// count of the servers up) and no persistence across Close. Real
// ZooKeeper stays the reference; the differential test (diff_test.go) runs the same random
// operation sequences against both and compares every reply.
package sim
