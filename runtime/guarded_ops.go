package runtime

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Op is one write of a guarded multi (the Guarded methods of the tenures:
// Lock, Lease, Leadership, Membership, TTLLease, Assignment): made by
// CreateOp, SetOp, DeleteOp or CheckOp, so that code writing under a
// tenure needs zkgen's types only. Guarded also takes go-zookeeper's
// request types (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest,
// *zk.CheckVersionRequest), as before.
type Op struct{ req any }

// Version is the version of a node (ZooKeeper's data version): a config
// node's, or the one a guarded write expects. It grows by one with every
// write and starts again at 0 when the node is deleted and created again.
type Version int32

// AnyVersion matches whatever version a node has, for SetOp, DeleteOp and
// CheckOp.
const AnyVersion Version = -1

// CreateOp creates a persistent node at path holding data, with the
// session's default ACL (open: world, all permissions; a
// *zk.CreateRequest of your own sets another); the multi fails with
// ErrNodeExists if it exists, ErrNoNode if its parent does not.
func CreateOp(path string, data []byte) Op {
	return Op{req: &zk.CreateRequest{Path: path, Data: data}}
}

// SetOp writes data to the node at path if its version is version
// (AnyVersion: whatever it is); the multi fails with ErrBadVersion or
// ErrNoNode otherwise.
func SetOp(path string, data []byte, version Version) Op {
	return Op{req: &zk.SetDataRequest{Path: path, Data: data, Version: int32(version)}}
}

// DeleteOp deletes the node at path if its version is version
// (AnyVersion: whatever it is); the multi fails with ErrBadVersion,
// ErrNoNode, or ErrNotEmpty when it has children.
func DeleteOp(path string, version Version) Op {
	return Op{req: &zk.DeleteRequest{Path: path, Version: int32(version)}}
}

// CheckOp makes the multi apply only if the node at path exists with
// version version (AnyVersion: whatever its version); it fails with
// ErrBadVersion or ErrNoNode otherwise.
func CheckOp(path string, version Version) Op {
	return Op{req: &zk.CheckVersionRequest{Path: path, Version: int32(version)}}
}

// The errors of a guarded multi's own writes (not of its tenure's check,
// which is the tenure's lost sentinel): the same values as go-zookeeper's,
// so errors.Is matches either.
var (
	ErrNodeExists = zk.ErrNodeExists // CreateOp: the node exists
	ErrNoNode     = zk.ErrNoNode     // the node, or a created node's parent, does not exist
	ErrBadVersion = zk.ErrBadVersion // SetOp, DeleteOp, CheckOp: another version
	ErrNotEmpty   = zk.ErrNotEmpty   // DeleteOp: the node has children
)

// guardedRequests turns Guarded's ops into go-zookeeper's requests: an Op
// into its request (a create with no ACL gets the session's default), a
// go-zookeeper request as it is. Anything else is refused before anything
// is sent.
func guardedRequests(s *Session, ops []any) ([]any, error) {
	out := make([]any, len(ops))
	for i, op := range ops {
		if o, ok := op.(Op); ok {
			op = o.req
		}
		switch r := op.(type) {
		case *zk.CreateRequest:
			if len(r.Acl) == 0 {
				c := *r
				c.Acl = opsOf(s).NodeACL(nil)
				r = &c
			}
			out[i] = r
		case *zk.SetDataRequest, *zk.DeleteRequest, *zk.CheckVersionRequest:
			out[i] = r
		default:
			return nil, fmt.Errorf("guarded write: op %d is a %T, not a write (use CreateOp, SetOp, DeleteOp or CheckOp)", i, op)
		}
	}
	return out, nil
}
