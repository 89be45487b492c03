package runtime

import (
	"slices"

	"github.com/go-zookeeper/zk"
)

// HandleOption configures a handle whose constructor has no options of its
// own (barriers, config, counter, election, group, semaphore). WithNodeACL
// is one; WithLayout is one for an election, a semaphore and a counter.
type HandleOption interface{ applyHandle(*handleConfig) }

// handleConfig is what every handle can be configured with.
type handleConfig struct {
	acl    []zk.ACL // ACL of created nodes; empty: the session's default
	layout Layout   // set by WithLayout (election, semaphore, counter, group, locks)
	name   string   // spec resource name (WithResourceName), for telemetry

	partitionNames []string // a partitioner's partition names (WithPartitionNames)
}

func handleOptions(opts []HandleOption) handleConfig {
	var c handleConfig
	for _, o := range opts {
		if o != nil {
			o.applyHandle(&c)
		}
	}
	return c
}

// NodeACL is the option that sets the ACL of every node a handle creates:
// its directory and missing parents (container nodes), its sequential and
// ephemeral nodes, queue buckets, items, markers and claims, barrier,
// config, election, group and two-phase commit nodes. It is accepted by
// every handle constructor (it is a LockOption, a QueueOption, a
// TwoPCOption and a HandleOption). An empty ACL keeps the default: every
// permission for everyone (world:anyone, cdrwa).
//
// Nodes that already exist keep their ACL; ZooKeeper checks the parent's
// ACL on create and delete, so a restrictive ACL on a directory also
// decides who may add or remove nodes in it. Sessions that must pass an
// "auth" or "digest" ACL authenticate with WithAuth at Connect.
type NodeACL struct{ acl []zk.ACL }

// WithNodeACL returns the option that makes a handle create its nodes with
// acl (see NodeACL). The slice is copied.
func WithNodeACL(acl []zk.ACL) NodeACL { return NodeACL{acl: slices.Clone(acl)} }

func (o NodeACL) applyHandle(c *handleConfig) { c.acl = o.acl }

// WorldAllACL is every permission for everyone: ZooKeeper's open ACL and
// the default for nodes a handle creates.
func WorldAllACL() []zk.ACL { return zk.WorldACL(zk.PermAll) }

// WorldReadACL lets everyone read and gives every permission to the
// authenticated session that creates the node (and to every session
// authenticated as the same identity). The creating session must have
// credentials (WithAuth), or ZooKeeper refuses the create.
func WorldReadACL() []zk.ACL {
	return []zk.ACL{{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}, {Perms: zk.PermAll, Scheme: "auth", ID: ""}}
}

// CreatorAllACL gives every permission to the authenticated identity that
// creates the node, and none to anyone else. The creating session must have
// credentials (WithAuth), or ZooKeeper refuses the create.
func CreatorAllACL() []zk.ACL { return zk.AuthACL(zk.PermAll) }

// DigestUser is one digest identity and its permissions: ID is
// "user:base64(sha1(user:password))" (see zk.DigestACL for computing it);
// Perms is a subset of "rwcda" (read, write, create, delete, admin).
type DigestUser struct {
	ID    string
	Perms string
}

// DigestACL grants each user its permissions. A session authenticates as a
// user with WithAuth("digest", "user:password").
func DigestACL(users ...DigestUser) []zk.ACL {
	out := make([]zk.ACL, 0, len(users))
	for _, u := range users {
		out = append(out, zk.ACL{Perms: Perms(u.Perms), Scheme: "digest", ID: u.ID})
	}
	return out
}

// Perms turns a permission string, a subset of "rwcda", into ZooKeeper's
// permission bits. Other letters are ignored.
func Perms(s string) int32 {
	var p int32
	for _, c := range s {
		switch c {
		case 'r':
			p |= zk.PermRead
		case 'w':
			p |= zk.PermWrite
		case 'c':
			p |= zk.PermCreate
		case 'd':
			p |= zk.PermDelete
		case 'a':
			p |= zk.PermAdmin
		}
	}
	return p
}

const (
	// LayoutCurator names nodes as Apache Curator does (the default).
	LayoutCurator Layout = iota
	// LayoutKazoo names nodes as Python's kazoo does:
	// <uuid hex>__lock__<seq> and, for read locks, <uuid hex>__rlock__<seq>.
	LayoutKazoo
)

// Layout selects the node naming of a lock, for sharing a path with another
// library.
type Layout int

// LayoutOption is the option that selects the node naming (and, for a
// semaphore, the protocol; for a counter, the stored format) of a lock,
// read/write lock, semaphore, election or counter, for sharing its path with
// another library's recipe. It is both a LockOption and a HandleOption.
type LayoutOption struct{ layout Layout }

// WithLayout sets the layout: LayoutCurator (the default) or LayoutKazoo.
func WithLayout(l Layout) LayoutOption { return LayoutOption{layout: l} }

func (o LayoutOption) applyHandle(c *handleConfig) { c.layout = o.layout }
