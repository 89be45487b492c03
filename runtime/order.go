package runtime

import (
	"slices"
	"strconv"
	"strings"
)

// contender is one sequential child of a recipe directory.
type contender struct {
	name string // child name
	seq  int32  // ZooKeeper sequence number (may be negative past the wrap)
}

// parseSeq returns the sequence suffix that follows the last occurrence of
// marker in name, as Curator's sorter reads it. ok is false for children that
// are not contender nodes (foreign children are ignored by every recipe).
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
	if err != nil {
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

// sortContenders keeps the children carrying marker, in acquisition order.
func sortContenders(children []string, marker string) []contender {
	out := make([]contender, 0, len(children))
	for _, c := range children {
		if seq, ok := parseSeq(c, marker); ok {
			out = append(out, contender{c, seq})
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

// indexOf returns the position of name in cs, or -1.
func indexOf(cs []contender, name string) int {
	for i, c := range cs {
		if c.name == name {
			return i
		}
	}
	return -1
}
