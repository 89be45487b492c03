package doctor

import (
	"fmt"
	"strconv"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// need is a frame size, in bytes, that something the spec declares can
// make, and what makes it.
type need struct {
	bytes int
	what  string
}

// The sizes of the frames' parts, as the runtime lays its nodes out. They
// are upper bounds where names vary, so a check errs towards asking more.
const (
	// createFields is what a create request holds besides its path and
	// data: xid, opcode, the lengths, one ACL entry (world:anyone), flags.
	createFields = 4 + 4 + 4 + 4 + (4 + 4 + 4 + len("world") + 4 + len("anyone")) + 4
	// replyFields is a getChildren reply's header and children count.
	replyFields = 4 + 8 + 4 + 4
	// contenderName is a contender's node name in a listing, with its
	// length: "_c_", a GUID, "-lease-" and a 10-digit sequence.
	contenderName = 4 + 3 + 36 + len("-lease-") + 10
	// planMember is a member in a partitioner's plan (JSON): its node
	// name ("_c_", GUID, "-member-", sequence), quoted, and a comma.
	planMember = 3 + 36 + len("-member-") + 10 + 3
	// bucketListing is the most a full queue bucket's listing holds: the
	// runtime carries small items in their names only as far as a full
	// bucket's listing stays within 512 KiB (runtime/queue_layout.go).
	bucketListing = 512 << 10
)

// largestRequest returns the largest request the spec's declared sizes
// make its handles send: a partitioner's plan, written by its leader,
// holds an owner per partition. ok is false when the spec has no
// partitioner; everything else it writes is small or the application's
// (items, payloads, values).
func largestRequest(s *spec.Spec) (n need, ok bool) {
	for _, r := range s.Resources {
		if r.Kind != spec.KindPartitioner {
			continue
		}
		// With one member: {"members":["..."],"owner":[0,0,...,0]}.
		plan := len(`{"members":[],"owner":[]}`) + planMember - 1 + 2*r.Partitions - 1 // no commas after the last
		b := createFields + len(r.FullPath+"/assignment") + plan
		if b > n.bytes {
			n = need{b, fmt.Sprintf("the plan of partitioner %s, %d partitions with one member (%d bytes more per member)", r.Name, r.Partitions, planMember)}
		}
	}
	return n, n.bytes > 0
}

// largestListing returns the largest listing (getChildren reply) the
// spec's declared sizes bound: a partitioner's owner nodes, a queue
// bucket, a semaphore's or lease's holders, a double barrier's
// participants. Listings that grow with use (waiters, group members,
// election candidates, a delay queue's items) have no declared bound and
// are not counted. ok is false when nothing is bounded.
func largestListing(s *spec.Spec) (n need, ok bool) {
	for _, r := range s.Resources {
		var b int
		var what string
		switch r.Kind {
		case spec.KindPartitioner:
			b, what = numbered("p-", r.Partitions), fmt.Sprintf("the %d owner nodes of partitioner %s", r.Partitions, r.Name)
		case spec.KindQueue, spec.KindPriorityQueue:
			b, what = bucketListing, fmt.Sprintf("a full bucket (%d items) of %s %s", runtime.DefaultBucketSize, r.Kind, r.Name)
		case spec.KindLease:
			b, what = numbered("slot-", r.Leases), fmt.Sprintf("the %d slots of lease %s", r.Leases, r.Name)
		case spec.KindSemaphore:
			b, what = r.Leases*contenderName, fmt.Sprintf("the %d holders of semaphore %s, waiters aside", r.Leases, r.Name)
		case spec.KindDoubleBarrier:
			b, what = r.Size*contenderName, fmt.Sprintf("the %d participants of double barrier %s", r.Size, r.Name)
		default:
			continue
		}
		if b += replyFields; b > n.bytes {
			n = need{b, what}
		}
	}
	return n, n.bytes > 0
}

// numbered is the listing size of the nodes prefix0 .. prefix<count-1>,
// each with its length.
func numbered(prefix string, count int) int {
	n := 0
	for i := range count {
		n += 4 + len(prefix) + len(strconv.Itoa(i))
	}
	return n
}
