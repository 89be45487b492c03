package sim

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
)

// The data tree: nodes, their stats and ACLs, and the watches set on them.
// Everything here runs under the server's lock.

// Kinds of node, as the server records them in ephemeralOwner.
const (
	ownerContainer int64 = math.MinInt64      // a container node
	ownerTTLBits   int64 = -0x100000000000000 // 0xFF << 56: a TTL node, the TTL in the low 40 bits
	ownerTTLMask   int64 = 0x000000FFFFFFFFFF // the TTL of a TTL node
	ownerExtMask   int64 = -0x100000000000000 // the high byte of an extended owner
)

type node struct {
	data     []byte
	acl      []ACL
	stat     Stat // ephemeralOwner and cversion as the server keeps them (see clientStat)
	children map[string]struct{}
}

// A node's cversion, as the server keeps it, counts the children ever
// created under it: a sequential child's number. Clients see the number of
// changes to its children, creations and deletions: twice the creations
// less the children left (ZooKeeper's DataNode.copyStat).

func (n *node) isEphemeral() bool {
	return n.stat.EphemeralOwner != 0 && !n.isContainer() && !n.isTTL()
}
func (n *node) isContainer() bool { return n.stat.EphemeralOwner == ownerContainer }
func (n *node) isTTL() bool {
	return n.stat.EphemeralOwner != ownerContainer && n.stat.EphemeralOwner&ownerExtMask == ownerTTLBits
}
func (n *node) ttl() int64 { return n.stat.EphemeralOwner & ownerTTLMask }

// clientStat is the stat a client sees: a container's and a TTL node's
// ephemeralOwner read as 0.
func (n *node) clientStat() Stat {
	st := n.stat
	if n.isContainer() || n.isTTL() {
		st.EphemeralOwner = 0
	}
	st.DataLength = int32(len(n.data))
	st.NumChildren = int32(len(n.children))
	st.Cversion = n.stat.Cversion*2 - st.NumChildren
	return st
}

type tree struct {
	nodes        map[string]*node
	reapable     map[string]struct{}           // containers and TTL nodes, for the reaper
	dataWatches  map[string]map[*conn]struct{} // getData and exists watches
	childWatches map[string]map[*conn]struct{}
	// addWatch's persistent watches: true for a recursive one. They stay
	// until removed or their connection closes.
	persistent map[string]map[*conn]bool
}

func newTree() *tree {
	t := &tree{nodes: map[string]*node{}, reapable: map[string]struct{}{}, dataWatches: map[string]map[*conn]struct{}{},
		childWatches: map[string]map[*conn]struct{}{}, persistent: map[string]map[*conn]bool{}}
	open := []ACL{{Perms: permAll, Scheme: "world", ID: "anyone"}}
	// /zookeeper is there without a transaction: no creation counted.
	t.nodes["/"] = &node{acl: open, children: map[string]struct{}{}}
	t.nodes["/zookeeper"] = &node{acl: open, children: map[string]struct{}{}}
	t.nodes["/"].children["zookeeper"] = struct{}{}
	t.nodes["/zookeeper"].children["config"] = struct{}{}
	t.nodes["/zookeeper"].children["quota"] = struct{}{}
	t.nodes["/zookeeper/config"] = &node{acl: []ACL{{Perms: permRead, Scheme: "world", ID: "anyone"}}, children: map[string]struct{}{}}
	t.nodes["/zookeeper/quota"] = &node{acl: open, children: map[string]struct{}{}}
	return t
}

func parentOf(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i == 0 {
		return "/", path[1:]
	}
	return path[:i], path[i+1:]
}

// validPath reports whether path is a valid node path (ZooKeeper's
// PathUtils): absolute, no empty, "." or ".." element, no trailing slash,
// no NUL or other disallowed characters.
func validPath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if path == "/" {
		return true
	}
	if path[len(path)-1] == '/' {
		return false
	}
	for _, el := range strings.Split(path[1:], "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	for _, c := range path {
		switch {
		case c == 0,
			c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f,
			c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0 && c <= 0xffff:
			return false
		}
	}
	return true
}

// identity is one authenticated id of a session.
type identity struct{ scheme, id string }

// digestID returns the digest id of "user:password".
func digestID(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// allowed reports whether ids may do perm on a node with acl.
func allowed(acl []ACL, perm int32, ids []identity) bool {
	if len(acl) == 0 {
		return true
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.Scheme == "world" && a.ID == "anyone" {
			return true
		}
		for _, id := range ids {
			if id.scheme == a.Scheme && idMatches(a.Scheme, id.id, a.ID) {
				return true
			}
		}
	}
	return false
}

func idMatches(scheme, have, want string) bool {
	if scheme != "ip" {
		return have == want
	}
	ip := net.ParseIP(have)
	if _, nw, err := net.ParseCIDR(want); err == nil {
		return ip != nil && nw.Contains(ip)
	}
	return ip != nil && ip.Equal(net.ParseIP(want))
}

// fixACL checks acl and replaces the auth scheme's entries by the
// session's ids, as ZooKeeper's fixupACL does.
func fixACL(acl []ACL, ids []identity) ([]ACL, Code) {
	if len(acl) == 0 {
		return nil, codeInvalidACL
	}
	var out []ACL
	for _, a := range acl {
		switch a.Scheme {
		case "world":
			if a.ID != "anyone" {
				return nil, codeInvalidACL
			}
			out = append(out, a)
		case "auth":
			n := 0
			for _, id := range ids {
				if id.scheme == "ip" {
					continue // not an authentication provider's id
				}
				out = append(out, ACL{Perms: a.Perms, Scheme: id.scheme, ID: id.id})
				n++
			}
			if n == 0 {
				return nil, codeInvalidACL
			}
			// ZooKeeper keeps a session's ids in a hash set; in name
			// order here (it agrees with ZooKeeper on the orders the
			// differential test met).
			added := out[len(out)-n:]
			sort.Slice(added, func(i, j int) bool {
				return added[i].Scheme < added[j].Scheme || added[i].Scheme == added[j].Scheme && added[i].ID < added[j].ID
			})
		case "digest":
			if !strings.Contains(a.ID, ":") {
				return nil, codeInvalidACL
			}
			out = append(out, a)
		case "ip":
			if net.ParseIP(a.ID) == nil {
				if _, _, err := net.ParseCIDR(a.ID); err != nil {
					return nil, codeInvalidACL
				}
			}
			out = append(out, a)
		default:
			return nil, codeInvalidACL
		}
	}
	return dedupACL(out), codeOK
}

func dedupACL(acl []ACL) []ACL {
	var out []ACL
	for _, a := range acl {
		dup := false
		for _, b := range out {
			if a == b {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out
}

// sortedChildren returns a node's children in name order.
func (n *node) sortedChildren() []string {
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// txn applies one transaction's changes in place, keeping the inverse of
// each so that a failed multi can be undone, and the watch events they
// trigger once committed.
type txn struct {
	t       *tree
	s       *Server
	zxid    int64
	now     int64 // ms
	undo    []func()
	events  []watchEvent
	session *session
	inMulti bool // the ops are a multi's (create's flags read differently)
	// the last op applied was a multi's plain create of a container, whose
	// result is a create2's
	createdContainer bool
	effects          []effect // what the servers' views replay (member.go)
}

// An effect is one change of a committed transaction, as the servers of
// the ensemble apply it to their own view of the tree (see member.apply):
// a node created (as it was then, without children), deleted, its data or
// its ACL set (with its stat after). A parent's child list, cversion and
// pzxid follow from its children's creations and deletions.
type effect struct {
	kind int
	path string
	data []byte
	acl  []ACL
	stat Stat
}

const (
	effCreate = iota
	effDelete
	effSetData
	effSetACL
)

// watchEvent is an event to fire, with the ACL of the node it concerns:
// ZooKeeper 3.8 fires a watch only for a watcher that may read that node
// (the watch is used up either way).
type watchEvent struct {
	typ  int32
	path string
	acl  []ACL
}

// rollback undoes every change of x, latest first.
func (x *txn) rollback() {
	for i := len(x.undo) - 1; i >= 0; i-- {
		x.undo[i]()
	}
	x.undo = nil
	x.events = nil
	x.effects = nil
}

// touchParent records a child added to or removed from parent.
func (x *txn) touchParent(parent *node, name string, add bool) {
	before := parent.stat
	if add {
		parent.children[name] = struct{}{}
		parent.stat.Cversion++ // creations only: see node
	} else {
		delete(parent.children, name)
	}
	parent.stat.Pzxid = x.zxid
	x.undo = append(x.undo, func() {
		parent.stat = before
		if add {
			delete(parent.children, name)
		} else {
			parent.children[name] = struct{}{}
		}
	})
}

// createReq is a create of any kind.
type createReq struct {
	path  string
	data  []byte
	acl   []ACL
	flags int32
	ttl   int64 // -1 unless createTTL
	op    int32
}

// create checks a create as ZooKeeper 3.8 does, in its order (the first
// failed check is the error), and adds the node.
func (x *txn) create(r createReq) (string, Code) {
	mode, code := x.createMode(r)
	if code != codeOK {
		return "", code
	}
	seq := mode == modePersistentSequential || mode == modeEphemeralSequential || mode == modePersistentSeqTTL
	path := r.path
	if !validPath(path) && !(seq && validPath(path+"0")) || path == "/" {
		return "", codeBadArguments
	}
	ids := x.session.ids()
	acl, code := fixACL(r.acl, ids)
	if code != codeOK {
		return "", code
	}
	path, parentPath, code := x.createPlace(path, seq, ids)
	if code != codeOK {
		return "", code
	}
	x.addNode(path, parentPath, mode, r, acl)
	return path, codeOK
}

// createMode checks a create's flags, TTL and op, and returns the mode of
// the node it makes.
func (x *txn) createMode(r createReq) (int32, Code) {
	mode := r.flags
	if mode < modePersistent || mode > modePersistentSeqTTL {
		return 0, codeBadArguments
	}
	isTTL := mode == modePersistentTTL || mode == modePersistentSeqTTL
	if isTTL && x.inMulti && r.op != opCreateTTL {
		// ZooKeeper 3.8 cannot read such a multi: the whole reply is
		// MarshallingError (see Server.multi).
		return 0, codeMarshallingError
	}
	if isTTL && !x.s.cfg.ttl {
		return 0, codeUnimplemented
	}
	if isTTL && (r.ttl <= 0 || r.ttl > maxTTL) || !isTTL && r.ttl >= 0 {
		return 0, codeBadArguments
	}
	if r.op == opCreateContainer && mode != modeContainer {
		return 0, codeBadArguments
	}
	if mode == modeContainer && r.op != opCreateContainer && !x.inMulti {
		// A plain create with the container flag makes a persistent node
		// (ZooKeeper 3.8's CreateTxn has no container); in a multi, a
		// container (see Server.multi for its result).
		mode = modePersistent
	}
	return mode, codeOK
}

// createPlace finds a create's parent, checks that ids may create under
// it, and returns the new node's path (numbered if seq) and its parent's.
func (x *txn) createPlace(path string, seq bool, ids []identity) (string, string, Code) {
	parentPath, _ := parentOf(path)
	if seq && strings.HasSuffix(path, "/") {
		parentPath = strings.TrimSuffix(path, "/")
		if parentPath == "" {
			parentPath = "/"
		}
	}
	parent := x.t.nodes[parentPath]
	if parent == nil {
		return "", "", codeNoNode
	}
	if !allowed(parent.acl, permCreate, ids) {
		return "", "", codeNoAuth
	}
	if seq {
		path += fmt.Sprintf("%010d", parent.stat.Cversion)
	}
	if !validPath(path) {
		return "", "", codeBadArguments
	}
	if x.t.nodes[path] != nil {
		return "", "", codeNodeExists
	}
	if parent.isEphemeral() {
		return "", "", codeNoChildrenForEphemerals
	}
	return path, parentPath, codeOK
}

// addNode adds the node a checked create makes, with its undo, effect and
// events.
func (x *txn) addNode(path, parentPath string, mode int32, r createReq, acl []ACL) {
	parent := x.t.nodes[parentPath]
	var owner int64
	switch mode {
	case modeEphemeral, modeEphemeralSequential:
		owner = x.session.id
	case modeContainer:
		owner = ownerContainer
	case modePersistentTTL, modePersistentSeqTTL:
		owner = ownerTTLBits | r.ttl
	}
	x.t.nodes[path] = &node{data: r.data, acl: acl, children: map[string]struct{}{}, stat: Stat{
		Czxid: x.zxid, Mzxid: x.zxid, Pzxid: x.zxid, Ctime: x.now, Mtime: x.now, EphemeralOwner: owner}}
	x.undo = append(x.undo, func() { delete(x.t.nodes, path) })
	nn := x.t.nodes[path]
	x.effects = append(x.effects, effect{kind: effCreate, path: path, data: nn.data, acl: nn.acl, stat: nn.stat})
	if mode == modeContainer || mode == modePersistentTTL || mode == modePersistentSeqTTL {
		x.t.reapable[path] = struct{}{}
		x.undo = append(x.undo, func() { delete(x.t.reapable, path) })
	}
	_, name := parentOf(path)
	x.touchParent(parent, name, true)
	if owner == x.session.id && owner != 0 {
		ss := x.session
		ss.ephemerals[path] = struct{}{}
		x.undo = append(x.undo, func() { delete(ss.ephemerals, path) })
	}
	x.events = append(x.events, watchEvent{eventNodeCreated, path, acl},
		watchEvent{eventNodeChildrenChanged, parentPath, parent.acl})
}

func (x *txn) delete(path string, version int32) Code {
	if !validPath(path) || path == "/" {
		return codeBadArguments
	}
	parentPath, name := parentOf(path)
	parent := x.t.nodes[parentPath]
	if parent == nil {
		return codeNoNode
	}
	// ZooKeeper checks the parent's DELETE permission before it looks
	// for the node.
	if !allowed(parent.acl, permDelete, x.session.ids()) {
		return codeNoAuth
	}
	n := x.t.nodes[path]
	if n == nil {
		return codeNoNode
	}
	if version != -1 && version != n.stat.Version {
		return codeBadVersion
	}
	if len(n.children) > 0 {
		return codeNotEmpty
	}
	x.remove(path, parentPath, name, n)
	return codeOK
}

// remove deletes a node known to exist and be childless.
func (x *txn) remove(path, parentPath, name string, n *node) {
	delete(x.t.nodes, path)
	x.undo = append(x.undo, func() { x.t.nodes[path] = n })
	x.effects = append(x.effects, effect{kind: effDelete, path: path})
	if _, ok := x.t.reapable[path]; ok {
		delete(x.t.reapable, path)
		x.undo = append(x.undo, func() { x.t.reapable[path] = struct{}{} })
	}
	x.touchParent(x.t.nodes[parentPath], name, false)
	if ss := x.s.sessions[n.stat.EphemeralOwner]; n.isEphemeral() && ss != nil {
		delete(ss.ephemerals, path)
		x.undo = append(x.undo, func() { ss.ephemerals[path] = struct{}{} })
	}
	x.events = append(x.events, watchEvent{eventNodeDeleted, path, n.acl},
		watchEvent{eventNodeChildrenChanged, parentPath, x.t.nodes[parentPath].acl})
}

func (x *txn) setData(path string, data []byte, version int32) (Stat, Code) {
	if !validPath(path) {
		return Stat{}, codeBadArguments
	}
	n := x.t.nodes[path]
	if n == nil {
		return Stat{}, codeNoNode
	}
	if !allowed(n.acl, permWrite, x.session.ids()) {
		return Stat{}, codeNoAuth
	}
	if version != -1 && version != n.stat.Version {
		return Stat{}, codeBadVersion
	}
	before, beforeData := n.stat, n.data
	x.undo = append(x.undo, func() { n.stat, n.data = before, beforeData })
	n.data = data
	n.stat.Version++
	n.stat.Mzxid = x.zxid
	n.stat.Mtime = x.now
	x.effects = append(x.effects, effect{kind: effSetData, path: path, data: data, stat: n.stat})
	x.events = append(x.events, watchEvent{eventNodeDataChanged, path, n.acl})
	return n.clientStat(), codeOK
}

func (x *txn) setACL(path string, acl []ACL, version int32) (Stat, Code) {
	if !validPath(path) {
		return Stat{}, codeBadArguments
	}
	ids := x.session.ids()
	fixed, code := fixACL(acl, ids)
	if code != codeOK {
		return Stat{}, code
	}
	n := x.t.nodes[path]
	if n == nil {
		return Stat{}, codeNoNode
	}
	if !allowed(n.acl, permAdmin, ids) {
		return Stat{}, codeNoAuth
	}
	if version != -1 && version != n.stat.Aversion {
		return Stat{}, codeBadVersion
	}
	before, beforeACL := n.stat, n.acl
	x.undo = append(x.undo, func() { n.stat, n.acl = before, beforeACL })
	n.acl = fixed
	n.stat.Aversion++
	x.effects = append(x.effects, effect{kind: effSetACL, path: path, acl: fixed, stat: n.stat})
	return n.clientStat(), codeOK
}

func (x *txn) check(path string, version int32) Code {
	if !validPath(path) {
		return codeBadArguments
	}
	n := x.t.nodes[path]
	if n == nil {
		return codeNoNode
	}
	if !allowed(n.acl, permRead, x.session.ids()) {
		return codeNoAuth
	}
	if version != -1 && version != n.stat.Version {
		return codeBadVersion
	}
	return codeOK
}
