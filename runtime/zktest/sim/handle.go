package sim

import (
	"slices"
	"strings"
)

// handle executes one request frame from c and queues its reply; it
// reports false when the connection must close.
func (s *Server) handle(c *conn, f []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.m.up() || !s.serving() {
		return false // its server stopped serving: the connection is being closed
	}
	if len(c.backlog) > 0 || c.waitZxid > c.m.applied {
		// A reply of this connection's waits for its server to apply its
		// transaction: later requests wait behind it (a client's requests
		// are answered in order).
		c.backlog = append(c.backlog, f)
		return true
	}
	return s.handleLocked(c, f)
}

// drain executes the requests c read while it waited, until one waits
// again (under the server's lock).
func (s *Server) drain(c *conn) {
	if c.draining {
		return // a commit of the request being drained: see conn.draining
	}
	c.draining = true
	defer func() { c.draining = false }()
	for len(c.backlog) > 0 && c.waitZxid <= c.m.applied {
		f := c.backlog[0]
		c.backlog = c.backlog[1:]
		if !s.handleLocked(c, f) {
			c.backlog = nil
			c.closeLocked()
			return
		}
	}
}

// handleLocked is handle under the server's lock: it reads the request's
// header, lets the fault plan act, and executes the request by its kind.
func (s *Server) handleLocked(c *conn, f []byte) bool {
	r := &reader{b: f}
	xid := r.int32()
	op := r.int32()
	if r.err != nil {
		return false
	}
	if c.isClosing() {
		// After a closeSession (or a failed auth) ZooKeeper executes nothing
		// more from the connection, and closes it only once the reply it
		// queued is written: a request the client sent meanwhile (kazoo's
		// stop() races its recipes' last deletes) is dropped, and must not
		// close the connection with that reply unsent.
		return true
	}
	ss := c.sess
	if ss == nil || s.sessions[ss.id] != ss || ss.conn != c {
		return false // expired, or moved to another connection
	}
	if s.faults.isolated[ss.id] {
		c.mu.Lock()
		c.lost = true
		c.mu.Unlock()
		return true // lost on the way
	}
	s.heard(c.m, ss)
	switch s.faultFor(ss, op) {
	case faultCutBefore:
		return false
	case faultCutAfter:
		defer c.closeLocked()
		c.mute()
	case faultHoldReplies:
		c.mute()
	}
	q := &request{c: c, ss: ss, xid: xid, op: op, r: r, w: newWriter()}
	switch op {
	case opPing, opCloseSession, opAuth:
		return s.sessionOp(q)
	case opSetWatches, opSetWatches2, opAddWatch, opCheckWatches, opRemoveWatches:
		return s.watchOp(q)
	case opSync, opExists, opGetData, opGetChildren, opGetChildren2, opGetACL:
		return s.readOp(q)
	case opCreate, opCreate2, opCreateContainer, opCreateTTL, opDelete, opSetData, opSetACL, opCheck:
		return s.writeOp(q)
	case opMulti:
		return s.multiOp(q)
	}
	q.reply(s.zxid, codeUnimplemented)
	return q.send()
}

// request is one request being executed: its header, the rest of its
// frame, and the reply being written.
type request struct {
	c   *conn
	ss  *session
	xid int32
	op  int32
	r   *reader
	w   *writer
}

// reply writes the reply header.
func (q *request) reply(zxid int64, code Code) {
	q.w.int32(q.xid)
	q.w.int64(zxid)
	q.w.int32(int32(code))
}

// send queues the reply now; it reports true (the connection stays).
func (q *request) send() bool {
	q.c.send(q.w.frame())
	return true
}

// sessionOp executes ping, closeSession and auth; each request executor
// reports false when the connection must close (a frame it cannot read).
func (s *Server) sessionOp(q *request) bool {
	switch q.op {
	case opCloseSession:
		q.ss.conn = nil // closed below, once the reply is out
		s.endSession(q.ss)
		q.reply(s.zxid, codeOK)
		q.send()
		q.c.closeAfterSent()
		return true
	case opAuth:
		q.r.int32() // type
		scheme := q.r.string()
		auth := q.r.buffer()
		if q.r.err != nil {
			return false
		}
		if scheme != "digest" {
			q.reply(s.zxid, codeAuthFailed)
			q.send()
			q.c.closeAfterSent()
			return true
		}
		id := identity{"digest", digestID(string(auth))}
		if !slices.Contains(q.ss.auth, id) {
			q.ss.auth = append(q.ss.auth, id)
		}
	}
	q.reply(s.zxid, codeOK) // ping, or auth added
	return q.send()
}

// watchOp executes setWatches, addWatch, checkWatches and removeWatches.
func (s *Server) watchOp(q *request) bool {
	c, r := q.c, q.r
	switch q.op {
	case opSetWatches, opSetWatches2:
		s.setWatches(c, r, q.op == opSetWatches2)
		if r.err != nil {
			return false
		}
		q.reply(s.zxid, codeOK)
	case opAddWatch:
		path, mode := r.string(), r.int32()
		if r.err != nil {
			return false
		}
		if !validPath(path) || mode != addWatchPersistent && mode != addWatchPersistentRecursive {
			q.reply(s.zxid, codeBadArguments)
			break
		}
		if c.m.view.persistent[path] == nil {
			c.m.view.persistent[path] = map[*conn]bool{}
		}
		c.m.view.persistent[path][c] = mode == addWatchPersistentRecursive
		q.reply(s.zxid, codeOK)
		q.w.int32(0) // ZooKeeper answers with an ErrorResponse of 0
	default: // checkWatches, removeWatches
		path, typ := r.string(), r.int32()
		if r.err != nil {
			return false
		}
		if !s.hasWatches(c, path, typ, q.op == opRemoveWatches) {
			q.reply(s.zxid, codeNoWatcher)
			break
		}
		q.reply(s.zxid, codeOK)
	}
	return q.send()
}

// readOp executes sync, exists, getData, getChildren(2) and getACL.
func (s *Server) readOp(q *request) bool {
	c, r := q.c, q.r
	path := r.string()
	switch q.op {
	case opSync:
		q.reply(s.zxid, codeOK)
		q.w.string(path)
		c.m.replyAt(c, s.zxid, q.w.frame()) // once its server caught up
		return true
	case opGetACL:
		n := c.m.view.nodes[path]
		switch {
		case !validPath(path):
			q.reply(s.zxid, codeBadArguments)
		case n == nil:
			q.reply(s.zxid, codeNoNode)
		case !allowed(n.acl, permRead|permAdmin, q.ss.ids()):
			q.reply(s.zxid, codeNoAuth)
		default:
			q.reply(s.zxid, codeOK)
			q.w.acls(shownACL(n.acl, allowed(n.acl, permAdmin, q.ss.ids())))
			st := n.clientStat()
			q.w.stat(&st)
		}
		return q.send()
	}
	watch := r.bool()
	if r.err != nil {
		return false
	}
	s.read(c, q.op, path, watch, q.w, q.reply)
	return q.send()
}

// writeOp executes one write (create, delete, setData, setACL, check) as
// a transaction of its own; the reply waits for the connection's server
// to apply it.
func (s *Server) writeOp(q *request) bool {
	x := s.newTxn(q.ss)
	body, code := x.apply(q.op, q.r)
	if q.r.err != nil {
		return false
	}
	if code != codeOK {
		x.rollback()
	}
	s.commit(x)
	q.reply(x.zxid, code)
	if code == codeOK {
		body(q.w)
	}
	q.c.m.replyAt(q.c, x.zxid, q.w.frame())
	return true
}

// multiOp executes a multi as one transaction (see multi); the reply
// waits for the connection's server to apply it.
func (s *Server) multiOp(q *request) bool {
	x := s.newTxn(q.ss)
	x.inMulti = true
	results, code := s.multi(x, q.r)
	if q.r.err != nil {
		return false
	}
	q.reply(x.zxid, code)
	if code == codeOK {
		for _, res := range results {
			res(q.w)
		}
		q.w.int32(-1)
		q.w.bool(true)
		q.w.int32(-1)
	}
	q.c.m.replyAt(q.c, x.zxid, q.w.frame())
	return true
}

// apply decodes and applies one write op; body writes its reply's body.
func (x *txn) apply(op int32, r *reader) (body func(*writer), code Code) {
	none := func(*writer) {}
	switch op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		req := createReq{path: r.string(), data: r.buffer(), acl: r.acls(), flags: r.int32(), ttl: -1, op: op}
		if op == opCreateTTL {
			req.ttl = r.int64()
		}
		if r.err != nil {
			return none, codeMarshallingError
		}
		path, code := x.create(req)
		if code != codeOK {
			return none, code
		}
		x.createdContainer = x.inMulti && op == opCreate && req.flags == modeContainer
		withStat := op != opCreate || x.createdContainer
		return func(w *writer) {
			w.string(path)
			if withStat {
				st := x.t.nodes[path].clientStat()
				w.stat(&st)
			}
		}, codeOK
	case opDelete:
		path, version := r.string(), r.int32()
		if r.err != nil {
			return none, codeMarshallingError
		}
		return none, x.delete(path, version)
	case opSetData:
		path, data, version := r.string(), r.buffer(), r.int32()
		if r.err != nil {
			return none, codeMarshallingError
		}
		st, code := x.setData(path, data, version)
		return func(w *writer) { w.stat(&st) }, code
	case opSetACL:
		path, acl, version := r.string(), r.acls(), r.int32()
		if r.err != nil {
			return none, codeMarshallingError
		}
		st, code := x.setACL(path, acl, version)
		return func(w *writer) { w.stat(&st) }, code
	case opCheck:
		path, version := r.string(), r.int32()
		if r.err != nil {
			return none, codeMarshallingError
		}
		return none, x.check(path, version)
	}
	return none, codeUnimplemented
}

// multi applies a multi's ops as one transaction: all or none. It returns
// the writers of the results: each op's, or, when one failed, OK for the
// ops before it, its error, and runtime inconsistency for the ops after.
//
// A multi ZooKeeper cannot read (a plain create with TTL flags) is answered
// MarshallingError as a whole, with no results.
func (s *Server) multi(x *txn, r *reader) ([]func(*writer), Code) {
	results, failed := s.multiApply(x, r)
	if r.err != nil {
		return nil, codeOK
	}
	for _, res := range results {
		if res.code == codeMarshallingError {
			x.rollback()
			s.commit(x)
			return nil, codeMarshallingError
		}
	}
	if failed >= 0 {
		x.rollback()
		s.commit(x) // a failed multi is a transaction too (see commit)
		return failedResults(results, failed), codeOK
	}
	s.commit(x)
	out := make([]func(*writer), len(results))
	for i, res := range results {
		op, body := res.op, res.body
		out[i] = func(w *writer) {
			w.int32(op)
			w.bool(false)
			w.int32(0)
			body(w)
		}
	}
	return out, codeOK
}

// multiResult is one op's result in a multi.
type multiResult struct {
	op   int32
	body func(*writer)
	code Code
}

// multiApply decodes and applies a multi's ops in x until one fails, and
// decodes the rest; failed is the index of the op that failed, -1 if none
// did. An op a multi cannot carry sets r.err.
func (s *Server) multiApply(x *txn, r *reader) (results []multiResult, failed int) {
	failed = -1
	for {
		typ := r.int32()
		done := r.bool()
		r.int32() // err
		if r.err != nil || done {
			return results, failed
		}
		if failed >= 0 {
			// Decode and skip: the multi has failed already.
			skip := &txn{t: &tree{nodes: map[string]*node{}}, s: s, session: x.session}
			skip.apply(typ, r)
			results = append(results, multiResult{op: typ, code: codeRuntimeInconsistency})
			continue
		}
		switch typ {
		case opCreate, opCreate2, opCreateContainer, opCreateTTL, opDelete, opSetData, opCheck:
		default:
			// An op a multi cannot carry: ZooKeeper cannot decode it.
			r.err = errShort
			return nil, failed
		}
		body, code := x.apply(typ, r)
		if typ == opCreate && code == codeOK && x.createdContainer {
			typ = opCreate2 // ZooKeeper answers a container's create with path and stat
		}
		results = append(results, multiResult{op: typ, body: body, code: code})
		if code != codeOK {
			failed = len(results) - 1
		}
	}
}

// failedResults are a failed multi's results: OK for the ops before the
// one that failed, its error, and runtime inconsistency for the ops after.
func failedResults(results []multiResult, failed int) []func(*writer) {
	errResult := func(code Code) func(*writer) {
		return func(w *writer) {
			w.int32(opError)
			w.bool(false)
			w.int32(int32(code))
			w.int32(int32(code))
		}
	}
	out := make([]func(*writer), len(results))
	for i, res := range results {
		switch {
		case i < failed:
			out[i] = errResult(codeOK)
		case i == failed:
			out[i] = errResult(res.code)
		default:
			out[i] = errResult(codeRuntimeInconsistency)
		}
	}
	return out
}

// read answers exists, getData, getChildren and getChildren2, setting the
// watch asked for.
func (s *Server) read(c *conn, op int32, path string, watch bool, w *writer, reply func(int64, Code)) {
	t := c.m.view
	if !validPath(path) {
		reply(s.zxid, codeBadArguments)
		return
	}
	n := t.nodes[path]
	if n == nil {
		if op == opExists && watch {
			s.watch(t.dataWatches, path, c)
		}
		reply(s.zxid, codeNoNode)
		return
	}
	if op != opExists && !allowed(n.acl, permRead, c.sess.ids()) {
		reply(s.zxid, codeNoAuth)
		return
	}
	if watch {
		if op == opGetChildren || op == opGetChildren2 {
			s.watch(t.childWatches, path, c)
		} else {
			s.watch(t.dataWatches, path, c)
		}
	}
	reply(s.zxid, codeOK)
	st := n.clientStat()
	switch op {
	case opExists:
		w.stat(&st)
	case opGetData:
		w.buffer(n.data)
		w.stat(&st)
	case opGetChildren:
		w.strings(n.sortedChildren())
	case opGetChildren2:
		w.strings(n.sortedChildren())
		w.stat(&st)
	}
}

// hasWatches reports whether c has watches of type typ on path (a
// WatcherType), and removes them if remove is set.
func (s *Server) hasWatches(c *conn, path string, typ int32, remove bool) bool {
	t := c.m.view
	found := false
	one := func(table map[string]map[*conn]struct{}) {
		if _, ok := table[path][c]; ok {
			found = true
			if remove {
				delete(table[path], c)
				if len(table[path]) == 0 {
					delete(table, path)
				}
			}
		}
	}
	pers := func(recursive bool) {
		if r, ok := t.persistent[path][c]; ok && r == recursive {
			found = true
			if remove {
				delete(t.persistent[path], c)
				if len(t.persistent[path]) == 0 {
					delete(t.persistent, path)
				}
			}
		}
	}
	switch typ {
	case watcherChildren:
		one(t.childWatches)
	case watcherData:
		one(t.dataWatches)
	case watcherAny:
		one(t.childWatches)
		one(t.dataWatches)
		pers(false)
		pers(true)
	case watcherPersistent:
		pers(false)
	case watcherPersistentRecursive:
		pers(true)
	}
	return found
}

// setWatches re-registers a reconnected client's watches, firing at once
// those whose event it missed (ZooKeeper's DataTree.setWatches), each list
// in path order: go-zookeeper lists them in its map's order, which
// differs from run to run, and the events would too.
func (s *Server) setWatches(c *conn, r *reader, v2 bool) {
	rel := r.int64()
	data, exist, child := r.strings(), r.strings(), r.strings()
	var pers, recursive []string
	if v2 {
		pers, recursive = r.strings(), r.strings()
	}
	if r.err != nil {
		return
	}
	for _, l := range [][]string{data, exist, child, pers, recursive} {
		slices.Sort(l)
	}
	t := c.m.view
	for _, ps := range []struct {
		paths     []string
		recursive bool
	}{{pers, false}, {recursive, true}} {
		for _, p := range ps.paths {
			if t.persistent[p] == nil {
				t.persistent[p] = map[*conn]bool{}
			}
			t.persistent[p][c] = ps.recursive
		}
	}
	for _, p := range data {
		switch n := t.nodes[p]; {
		case n == nil:
			c.event(eventNodeDeleted, p)
		case n.stat.Mzxid > rel:
			c.event(eventNodeDataChanged, p)
		default:
			s.watch(t.dataWatches, p, c)
		}
	}
	for _, p := range exist {
		if t.nodes[p] != nil {
			c.event(eventNodeCreated, p)
		} else {
			s.watch(t.dataWatches, p, c)
		}
	}
	for _, p := range child {
		switch n := t.nodes[p]; {
		case n == nil:
			c.event(eventNodeDeleted, p)
		case n.stat.Pzxid > rel:
			c.event(eventNodeChildrenChanged, p)
		default:
			s.watch(t.childWatches, p, c)
		}
	}
}

// shownACL is the ACL getACL shows: to a caller without ADMIN on the node,
// ZooKeeper 3.8 shows digest ids without their hash ("user:x").
func shownACL(acl []ACL, admin bool) []ACL {
	if admin {
		return acl
	}
	out := make([]ACL, len(acl))
	for i, a := range acl {
		if a.Scheme == "digest" {
			user, _, _ := strings.Cut(a.ID, ":")
			a.ID = user + ":x"
		}
		out[i] = a
	}
	return out
}
