package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// family describes the contender nodes that share one lock directory: the
// name marker of each kind of node and which kinds make which wait.
type family struct {
	markers   []string // node-name marker of each kind, just before the sequence
	blockedBy [][]bool // blockedBy[k][j]: a node of kind k waits for lower nodes of kind j
	kazoo     bool     // kazoo naming: <uuid hex><marker><seq>, else Curator's _c_<uuid>-<marker><seq>
}

// contender is one sequential child of a recipe directory.
type contender struct {
	name string // child name
	seq  int32  // ZooKeeper sequence number (may be negative past the wrap)
	kind int    // index of its marker in the family
}

// prefix returns a fresh, GUID-carrying name prefix for a node of kind k,
// its GUID drawn from r (the session's).
func (f *family) prefix(r *client.Rand, k int) string {
	var g [36]byte
	var b strings.Builder // one allocation: the name itself
	b.Grow(len(client.ProtectedPrefix) + len(g) + 1 + len(f.markers[k]))
	if f.kazoo {
		b.Write(r.AppendGUID(g[:0], false))
	} else {
		b.WriteString(client.ProtectedPrefix)
		b.Write(r.AppendGUID(g[:0], true))
		b.WriteByte('-')
	}
	b.WriteString(f.markers[k])
	return b.String()
}

// sortContenders keeps the children that are nodes of f, in queue order.
func (f *family) sortContenders(children []string) []contender {
	out := make([]contender, 0, len(children))
	for _, c := range children {
		for k, m := range f.markers {
			if seq, ok := parseSeq(c, m); ok {
				out = append(out, contender{c, seq, k})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b contender) int {
		if c := seqCompare(a.seq, b.seq); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// blocker returns the index of the nearest node before cs[i] that cs[i]
// must wait for, or -1 when cs[i] holds.
func (f *family) blocker(cs []contender, i int) int {
	for j := i - 1; j >= 0; j-- {
		if f.blockedBy[cs[i].kind][cs[j].kind] {
			return j
		}
	}
	return -1
}

// place is where a contender node stands among the children of its
// directory (family.place).
type place struct {
	blocker string // the nearest node before it that blocks it; "" when none
	found   bool   // the node is among the children
	first   bool   // no node that blocks the node's kind comes before blocker
	later   bool   // a node of the family comes after the node
}

// place finds, among children, where the contender node name stands: the
// blocker, the nearest node before it in queue order (sortContenders'
// order) whose kind blocks name's ("" when there is none: name holds);
// whether that blocker is the first of the nodes that block name's kind
// (for an exclusive lock, the first node of the family; for a reader, the
// first writer); and whether any node comes after name (someone may wait
// for name). found is false when name is not among the children. It is
// blocker over sortContenders in one pass, with no sort and no copy of the
// children: a waiter in a queue of N reads all N names, and sorting them
// was the largest part of its own work at N = 1000.
func (f *family) place(children []string, name string) place {
	own, ok := f.parse(name)
	if !ok {
		return place{}
	}
	var best, lowest contender
	var p place
	for _, c := range children {
		if c == name {
			p.found = true
			continue
		}
		k, ok := f.parse(c)
		switch {
		case !ok:
			continue
		case !queuedBefore(k, own):
			p.later = true
			continue
		}
		if !f.blockedBy[own.kind][k.kind] {
			continue
		}
		if lowest.name == "" || queuedBefore(k, lowest) {
			lowest = k
		}
		if best.name == "" || queuedBefore(best, k) {
			best = k
		}
	}
	if !p.found {
		return place{}
	}
	p.blocker = best.name
	p.first = best.name != "" && best.name == lowest.name
	return p
}

// parse reads a child name as a contender node of f: its kind is the first
// marker it carries a sequence number after.
func (f *family) parse(name string) (contender, bool) {
	for k, m := range f.markers {
		if seq, ok := parseSeq(name, m); ok {
			return contender{name, seq, k}, true
		}
	}
	return contender{}, false
}

// queuedBefore reports whether a comes before b in queue order.
func queuedBefore(a, b contender) bool {
	if c := seqCompare(a.seq, b.seq); c != 0 {
		return c < 0
	}
	return a.name < b.name
}

// indexOf returns the position of name in cs, or -1.
func indexOf(cs []contender, name string) int {
	for i, c := range cs {
		if c.name == name {
			return i
		}
	}
	return -1
}

// --- Sequence numbers
//
// A sequential node's name ends in its parent's counter, ten digits (a
// minus sign and ten digits past the wrap). The counter is a signed 32-bit
// int that wraps from 2147483647 to -2147483648, so nodes are ordered in
// serial-number arithmetic (RFC 1982), by seqCompare, everywhere: lock,
// election, group, semaphore and barrier contenders, and queue items.

// parseSeq returns the sequence suffix that directly follows marker at the
// end of name. ok is false for children that are not such nodes (foreign
// children are ignored by every recipe).
func parseSeq(name, marker string) (seq int32, ok bool) {
	i := strings.LastIndex(name, marker)
	if i < 0 {
		return 0, false
	}
	return parseSeqText(name[i+len(marker):])
}

// parseSeqText parses a ZooKeeper sequence suffix (10 digits, or a minus
// sign and 10 digits past the int32 wrap).
func parseSeqText(s string) (int32, bool) {
	if len(s) < 10 || len(s) > 11 || s[0] == '+' {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(v), true
}

// seqCompare orders sequence numbers a and b (-1, 0 or +1) in serial-number
// arithmetic: a is before b when b is less than 2^31 steps after a. Live
// nodes always span far less than that, so this is a total order on them
// and stays correct across the wrap, where plain integer order breaks.
func seqCompare(a, b int32) int {
	switch d := int32(uint32(a) - uint32(b)); {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

// Holder describes one contender node of a lock: the holder(s) first, then
// the waiters in queue order.
type Holder struct {
	Node string // full znode path
	Seq  int32  // sequence number
	// Token is the node's creation zxid. It orders the contenders of a
	// kazoo-layout semaphore; it is not the fencing token: Lock.Token, the
	// holder's own, is the lock directory's zxid when the holder saw it
	// held, at least this and strictly above every earlier holder's.
	Token   int64
	Created time.Time // creation time (server clock)
	Holds   bool      // true for the current holder(s)
	Read    bool      // a read-lock node (read/write locks only)
	Owner   Owner     // metadata written by the contender
	Known   bool      // false when the node carries no zkgen metadata (e.g. Curator's)
}

// listHolders lists the contenders of dir in queue order; those that no earlier
// node blocks hold.
func listHolders(ctx context.Context, s *Session, dir string, fam *family) ([]Holder, error) {
	kids, err := opsOf(s).Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cs := fam.sortContenders(kids)
	out := make([]Holder, len(cs))
	ok := make([]bool, len(cs))
	errs := make([]error, len(cs))
	opsOf(s).Parallel(len(cs), 16, func(i int) { // at most 16 requests in flight
		c := cs[i]
		p := joinPath(dir, c.name)
		data, st, err := opsOf(s).Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			errs[i] = err
			return
		}
		o, known := parseOwner(data)
		out[i] = Holder{Node: p, Seq: c.seq, Token: st.Czxid, Created: time.UnixMilli(st.Ctime).UTC(), Owner: o, Known: known,
			Holds: fam.blocker(cs, i) < 0, Read: len(fam.markers) == 2 && c.kind == kindRead}
		ok[i] = true
	})
	if err := client.JoinErrors(errs...); err != nil {
		return nil, err
	}
	res := out[:0]
	for i := range out {
		if ok[i] {
			res = append(res, out[i])
		}
	}
	return res, nil
}

func reapDir(ctx context.Context, s *Session, dir string, fam *family, olderThan time.Duration) ([]Holder, error) {
	hs, err := listHolders(ctx, s, dir, fam)
	if err != nil {
		return nil, err
	}
	return reapListed(ctx, s, dir, hs, olderThan)
}

// reapListed deletes the nodes of hs (contenders of dir) created more than
// olderThan ago and returns those it removed.
func reapListed(ctx context.Context, s *Session, dir string, hs []Holder, olderThan time.Duration) ([]Holder, error) {
	cutoff := time.Now().Add(-olderThan)
	var removed []Holder
	for _, h := range hs {
		if !h.Created.Before(cutoff) {
			continue
		}
		err := opsOf(s).Delete(ctx, h.Node, -1)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("reap %s: %w", dir, err)
		}
		opsOf(s).Log().Info("reaped lock node", "path", h.Node, "owner", h.Owner.Host, "created", h.Created)
		removed = append(removed, h)
	}
	return removed, nil
}

// Owner is the metadata every lock and lease node carries as JSON data, so
// operators (and Holders) can see who holds and who waits.
type Owner struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Session string    `json:"session"`           // ZooKeeper session id, 0x-hex
	Since   time.Time `json:"since"`             // when the node was created (client clock)
	Purpose string    `json:"purpose,omitempty"` // set with SetPurpose

	// RevokeRequestedAt is set by RequestRevoke (requester's clock).
	RevokeRequestedAt time.Time `json:"revoke_requested_at,omitzero"`
}

var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
})

// ownerData returns the owner metadata of a node created now, as JSON: what
// json.Marshal makes of an Owner, built by hand as it is written on every
// acquisition (one allocation instead of several).
func ownerData(s *Session, purpose string) []byte { return ownerOf(s.ID(), purpose) }

// ownerOf is ownerData for the session whose id is id.
func ownerOf(id int64, purpose string) []byte {
	b := make([]byte, 0, 128+len(purpose))
	b = append(b, `{"host":`...)
	b = append(b, hostJSON()...)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(os.Getpid()), 10)
	b = append(b, `,"session":"0x`...)
	b = strconv.AppendInt(b, id, 16)
	b = append(b, `","since":"`...)
	b = time.Now().UTC().Truncate(time.Millisecond).AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if purpose != "" {
		b = append(b, `,"purpose":`...)
		b = appendJSONString(b, purpose)
	}
	return append(b, '}')
}

// hostJSON is the host name as a JSON string.
var hostJSON = sync.OnceValue(func() []byte { return appendJSONString(nil, hostname()) })

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// parseOwner decodes node data written by this package. Nodes written by
// other libraries (Curator writes nothing or an address) give ok == false.
func parseOwner(data []byte) (o Owner, ok bool) {
	if len(data) == 0 || data[0] != '{' {
		return Owner{}, false
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return Owner{}, false
	}
	return o, true
}

// The exclusive lock's node families.
var (
	// Curator's InterProcessMutex: _c_<uuid>-lock-<seq>.
	curatorMutex = &family{markers: []string{"lock-"}, blockedBy: [][]bool{{true}}}
	// kazoo's Lock: <hex>__lock__<seq>.
	kazooMutex = &family{markers: []string{"__lock__"}, blockedBy: [][]bool{{true}}, kazoo: true}
)

type handOffsKey struct{}

// handOffsOf counts the session's lock waiters (and election candidates)
// that took over without a listing (see takeOver).
func handOffsOf(s *Session) *atomic.Int64 {
	return client.Shared(s, handOffsKey{}, func() *atomic.Int64 { return new(atomic.Int64) })
}

// Node kinds of the read/write families.
const (
	kindRead  = 0
	kindWrite = 1
)
