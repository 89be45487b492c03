package runtime

import (
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

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
func (o NodeACL) applyLock(c *lockConfig)     { o.applyHandle(&c.handleConfig) }
func (o NodeACL) applyQueue(c *queueConfig)   { o.applyHandle(&c.handleConfig) }
func (o NodeACL) applyTwoPC(c *twoPCConfig)   { o.applyHandle(&c.handleConfig) }

// HandleOption configures a handle whose constructor has no options of its
// own (barriers, config, counter, election, group, semaphore). WithNodeACL
// is one.
type HandleOption interface{ applyHandle(*handleConfig) }

// handleConfig is what every handle can be configured with.
type handleConfig struct {
	acl []zk.ACL // ACL of created nodes; empty: the session's default
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

// nodeACL returns the ACL for nodes created with handle ACL acl: acl
// itself, or the session's default when empty.
func (s *Session) nodeACL(acl []zk.ACL) []zk.ACL {
	if len(acl) == 0 {
		return s.acl
	}
	return acl
}

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

// errNoCredentials is returned, before any request is sent, for a create
// whose ACL names the authenticated creator ("auth" scheme: CreatorAllACL,
// WorldReadACL) on a session without credentials. ZooKeeper would refuse
// it (with "invalid ACL"); what is missing is the caller's credentials, so
// it is reported as ErrNoAuth.
var errNoCredentials = fmt.Errorf("%w: the ACL grants the authenticated creator and this session has no credentials (see WithAuth)", zk.ErrNoAuth)

// creatable reports errNoCredentials if ZooKeeper would refuse a node with
// acl because the session has no credentials.
func (s *Session) creatable(acl []zk.ACL) error {
	if len(s.auth) > 0 {
		return nil
	}
	for _, a := range acl {
		if a.Scheme == "auth" {
			return errNoCredentials
		}
	}
	return nil
}

// create creates one node with the handle ACL acl (see nodeACL).
func (s *Session) create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	acl = s.nodeACL(acl)
	if err := s.creatable(acl); err != nil {
		return "", err
	}
	return s.conn.Create(path, data, flags, acl)
}

// connMulti sends ops as one multi, unless one of its creates could not
// succeed for want of credentials.
func (s *Session) connMulti(ops ...any) ([]zk.MultiResponse, error) {
	for _, op := range ops {
		if c, ok := op.(*zk.CreateRequest); ok {
			if err := s.creatable(c.Acl); err != nil {
				return nil, err
			}
		}
	}
	return s.conn.Multi(ops...)
}
