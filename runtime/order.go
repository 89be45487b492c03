package runtime

import (
	"slices"
	"strconv"
	"strings"
)

// family describes the contender nodes that share one lock directory: the
// name marker of each kind of node and which kinds make which wait.
type family struct {
	markers   []string // node-name marker of each kind, just before the sequence
	blockedBy [][]bool // blockedBy[k][j]: a node of kind k waits for lower nodes of kind j
	kazoo     bool     // kazoo naming: <uuid hex><marker><seq>, else Curator's _c_<uuid>-<marker><seq>
}

// Node kinds of the read/write families.
const (
	kindRead  = 0
	kindWrite = 1
)

var (
	// Curator's InterProcessMutex: _c_<uuid>-lock-<seq>.
	curatorMutex = &family{markers: []string{"lock-"}, blockedBy: [][]bool{{true}}}
	// Curator's InterProcessReadWriteLock: _c_<uuid>-__READ__<seq>, _c_<uuid>-__WRIT__<seq>.
	curatorRW = &family{markers: []string{"__READ__", "__WRIT__"}, blockedBy: [][]bool{{false, true}, {true, true}}}
	// kazoo's Lock: <hex>__lock__<seq>.
	kazooMutex = &family{markers: []string{"__lock__"}, blockedBy: [][]bool{{true}}, kazoo: true}
	// kazoo's ReadLock/WriteLock: <hex>__rlock__<seq>, <hex>__lock__<seq>.
	kazooRW = &family{markers: []string{"__rlock__", "__lock__"}, blockedBy: [][]bool{{false, true}, {true, true}}, kazoo: true}
	// Curator's LeaderLatch: _c_<uuid>-latch-<seq>.
	curatorLatch = &family{markers: []string{"latch-"}, blockedBy: [][]bool{{true}}}
	// Group members: _c_<uuid>-member-<seq> (nobody waits on anybody).
	groupMembers = &family{markers: []string{"member-"}, blockedBy: [][]bool{{false}}}
	// Curator's semaphore leases: <path>/leases/_c_<uuid>-lease-<seq>.
	curatorLeases = &family{markers: []string{"lease-"}, blockedBy: [][]bool{{false}}}
)

// prefix returns a fresh, GUID-carrying name prefix for a node of kind k.
func (f *family) prefix(k int) string {
	if f.kazoo {
		return strings.ReplaceAll(newGUID(), "-", "") + f.markers[k]
	}
	return protectedPrefix + newGUID() + "-" + f.markers[k]
}

// contender is one sequential child of a recipe directory.
type contender struct {
	name string // child name
	seq  int32  // ZooKeeper sequence number (may be negative past the wrap)
	kind int    // index of its marker in the family
}

// parseSeq returns the sequence suffix that directly follows marker at the
// end of name. ok is false for children that are not such nodes (foreign
// children are ignored by every recipe).
func parseSeq(name, marker string) (seq int32, ok bool) {
	i := strings.LastIndex(name, marker)
	if i < 0 {
		return 0, false
	}
	suffix := name[i+len(marker):]
	if len(suffix) < 10 || len(suffix) > 11 {
		return 0, false
	}
	v, err := strconv.ParseInt(suffix, 10, 32)
	if err != nil || suffix[0] == '+' {
		return 0, false
	}
	return int32(v), true
}

// seqBefore orders sequence numbers in serial-number arithmetic (RFC 1982):
// the parent's counter is a signed 32-bit int that wraps from 2147483647 to
// -2147483648, so "a before b" means b is less than 2^31 steps after a. Live
// contenders always span far less than that, so this is a total order on them
// and stays correct across the wrap, where plain integer order breaks.
func seqBefore(a, b int32) bool {
	return int32(uint32(a)-uint32(b)) < 0
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
		switch {
		case a.seq == b.seq:
			return strings.Compare(a.name, b.name)
		case seqBefore(a.seq, b.seq):
			return -1
		default:
			return 1
		}
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

// indexOf returns the position of name in cs, or -1.
func indexOf(cs []contender, name string) int {
	for i, c := range cs {
		if c.name == name {
			return i
		}
	}
	return -1
}
