// Package client is zkgen's ZooKeeper client layer: what the recipes need
// from a session and go-zookeeper does not give.
//
//   - Sessions: Connect, the session's own clock (liveness.go: give up
//     before the server expires it), expiry, Close, and Supervise, which
//     opens a new session after each end.
//   - Operations bound to a context, retried on recoverable errors, with
//     the outcome of a write whose reply was lost resolved (OpsOf:
//     ops.go, retry.go), and a create pipelined with its listing
//     (pipeline.go).
//   - TLS and host resolution (tls.go, hosts.go), and the servers the
//     ensemble's configuration names (ensconfig.go, follow.go); the zxid
//     guard against go-zookeeper's reconnect race (zxid.go, over
//     internal/wire).
//   - Requests go-zookeeper cannot send (addWatch: persistent recursive
//     watches), written by the session on go-zookeeper's own connection,
//     and the stream of every event go-zookeeper passes to the session
//     (inject.go: Ops.Inject, Ops.AddWatchRecursive, Ops.SyncZxid,
//     Ops.Listen).
//   - The session's own counters (session_telemetry.go) and the providers
//     the recipes build their telemetry from.
//   - General hooks through which a handle registers what it needs at the
//     session's close and end, and per-session state it shares (hooks.go,
//     shared.go). The session itself holds nothing of any recipe.
//
// Package runtime's recipes use only this package's exported API, and this
// package names none of them. runtime re-exports the public names
// (Session, Connect, the options and the errors), so that users and
// generated code import runtime alone.
package client
