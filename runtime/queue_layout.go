package runtime

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Queue layout under the queue directory <dir>:
//
//	<dir>/b-0000000000/item-0000000000      items (persistent sequential), FIFO
//	<dir>/b-0000000000/item-.<b64>.0000000001  a small item carried in its name
//	<dir>/p-07/b-0000000000/item-0000000000 items of priority 7 (priority queues, queue_prio.go)
//	<dir>/b-0000000000/item-07-0000000000   the same before zkgen's levels layout (upgradeLegacy)
//	<dir>/b-0000000000/item-d001763872345678-0000000000  items due at a Unix millisecond (delay queues)
//	<dir>/marks/<guid>                       ephemeral markers of puts and takes
//	<dir>/claims/<bucket>.<item>             ephemeral claims (at-least-once delivery)
//	<dir>/attempts/<bucket>.<item>           deliveries so far, persistent (queue_dead.go)
//	<dir>/dead/<bucket>.<item>               dead letters, persistent (queue_dead.go)
//
// Items live in numbered buckets so that no single getChildren reply grows
// past jute.maxbuffer. A bucket is open while its data version is 0; the
// producer whose put reaches the bucket size seals it (setData, version 1)
// and creates the next bucket. Every put is a multi that checks version 0 of
// its bucket, so nothing lands in a sealed bucket, and a consumer that lists
// a sealed bucket sees its final contents. Consumers walk buckets in order
// and delete a sealed bucket once it is empty. A priority queue is one such
// queue per priority. Delay queues use a single bucket that is never
// sealed, whose item names carry the due time (Unix milliseconds, fixed
// width) before the sequence number, so that name order is due order, then
// put order.
//
// A FIFO item whose encoding is short rides in its node's name, base64url
// between dots, and the node holds no data: a consumer's listing then
// carries the items themselves, and a take needs no read before its delete.
// The limit keeps a full bucket's listing under half of jute.maxbuffer (see
// inlineLimit).

const (
	bucketPrefix = "b-"
	itemPrefix   = "item-"
	marksDir     = "marks"
	claimsDir    = "claims"
	sealedData   = "sealed"

	// DefaultBucketSize is the number of items per bucket of a FIFO queue
	// (see WithBucketSize). A listing of a full bucket is about 200 KB.
	DefaultBucketSize = 10000

	// maxBatchOps and maxBatchBytes bound one multi of PutAll/TakeN, well
	// under ZooKeeper's default jute.maxbuffer of 1 MiB.
	maxBatchOps   = 1000
	maxBatchBytes = 512 << 10
)

func bucketName(i int64) string { return fmt.Sprintf("%s%010d", bucketPrefix, i) }

// parseBucket returns the index of a bucket name; ok is false for other
// children of the queue directory.
func parseBucket(name string) (int64, bool) {
	if !strings.HasPrefix(name, bucketPrefix) || len(name) != len(bucketPrefix)+10 {
		return 0, false
	}
	v, err := strconv.ParseInt(name[len(bucketPrefix):], 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// sortBuckets keeps the bucket names of kids, in order.
func sortBuckets(kids []string) []string {
	var out []string
	for _, k := range kids {
		if _, ok := parseBucket(k); ok {
			out = append(out, k)
		}
	}
	slices.Sort(out) // fixed width: string order is numeric order
	return out
}

// itemNamePrefix is the name an item is created with; ZooKeeper appends the
// sequence number. When inline is set, the item's data rides in the name.
func itemNamePrefix(priority bool, prio int, data []byte, inline bool) string {
	name := itemPrefix
	if priority {
		name = fmt.Sprintf("%s%02d-", itemPrefix, prio)
	}
	if inline {
		name += "." + base64.RawURLEncoding.EncodeToString(data) + "."
	}
	return name
}

// Delay queue item names: item-d<due>-<seq>, due in Unix milliseconds
// written in dueDigits digits.
const (
	dueDigits = 15
	maxDue    = 999_999_999_999_999
)

// delayItemPrefix is the name a delay queue item due at the Unix
// millisecond due is created with (ZooKeeper appends the sequence number).
func delayItemPrefix(due int64) string {
	return fmt.Sprintf("%sd%0*d-", itemPrefix, dueDigits, min(max(due, 0), maxDue))
}

// dueMillis is t as the Unix millisecond written in a delay queue item's
// name: rounded up, so that an item is never taken before t, and clamped to
// what the name can hold.
func dueMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++ // a fraction of a millisecond past ms
	}
	return min(max(ms, 0), maxDue)
}

// Inline items: a bucket's listing carries at most inlineBudget bytes of
// names, so an item rides in its name when its encoding fits the bucket
// size's share of that, and never past maxInline encoded characters.
const (
	inlineBudget = 512 << 10
	nameOverhead = 4 + len(itemPrefix) + 2 + 10 // length prefix, "item-", dots, sequence
	maxInline    = 256
)

// inlineLimit returns the longest item encoding (in bytes, before base64)
// that rides in the name with buckets of size items; 0 disables it.
func inlineLimit(size int) int {
	if size <= 0 {
		return 0
	}
	chars := min(inlineBudget/size-nameOverhead, maxInline)
	if chars < 4 {
		return 0
	}
	return chars / 4 * 3
}

// qitem is one parsed item name.
type qitem struct {
	name   string
	prio   int
	due    int64 // delay queues: the Unix millisecond the item is due
	seq    int32
	inline []byte // the data carried in the name, if any
	hasIn  bool   // the item is inline (even an empty one)
}

// parseItem parses item-<seq>, item-<pp>-<seq> and item-.<b64>.<seq>; ok is
// false for foreign children.
func parseItem(name string) (qitem, bool) {
	if !strings.HasPrefix(name, itemPrefix) {
		return qitem{}, false
	}
	rest := name[len(itemPrefix):]
	it := qitem{name: name}
	if len(rest) == 2+dueDigits+10 && rest[0] == 'd' && rest[1+dueDigits] == '-' {
		due, err := strconv.ParseInt(rest[1:1+dueDigits], 10, 64)
		if err != nil || due < 0 {
			return qitem{}, false
		}
		it.due = due
		rest = rest[2+dueDigits:]
	}
	if len(rest) == 13 && rest[0] != '.' && rest[2] == '-' {
		p, err := strconv.Atoi(rest[:2])
		if err != nil || p < 0 {
			return qitem{}, false
		}
		it.prio = p
		rest = rest[3:]
	}
	if strings.HasPrefix(rest, ".") {
		end := strings.LastIndexByte(rest, '.')
		if end < 1 {
			return qitem{}, false
		}
		d, err := base64.RawURLEncoding.DecodeString(rest[1:end])
		if err != nil {
			return qitem{}, false
		}
		it.inline, it.hasIn = d, true
		rest = rest[end+1:]
	}
	seq, ok := parseSeqText(rest)
	if !ok {
		return qitem{}, false
	}
	it.seq = seq
	return it, true
}

// sortItems keeps the item names of kids in serving order: lower priority
// index first, earlier due time first (delay queues), then sequence order
// (serial arithmetic, wrap-safe).
func sortItems(kids []string) []qitem {
	out := make([]qitem, 0, len(kids))
	for _, k := range kids {
		if it, ok := parseItem(k); ok {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b qitem) int {
		if a.prio != b.prio {
			return a.prio - b.prio
		}
		if a.due != b.due {
			return cmp.Compare(a.due, b.due)
		}
		if c := seqCompare(a.seq, b.seq); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// seqOf returns the sequence number of a created item path.
func seqOf(path string) (int32, bool) {
	it, ok := parseItem(path[strings.LastIndexByte(path, '/')+1:])
	return it.seq, ok
}
