package breaking

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/spec"
)

// doc is a spec with head (top-level keys after version and package) and
// resources (indented by two spaces); resources start on line 4 when head
// is empty.
func doc(head, resources string) string {
	return "version: 1\npackage: p\n" + head + "resources:\n" + resources
}

// types is a head declaring the payload types the cases use (lines 3-6,
// so resources start on line 8).
const types = `types:
  Job: {fields: {name: string, attempt: int}}
  Meta: {fields: {owner: string}}
  Ext: {go_type: "example.com/m.Ext"}
`

// compare parses old and new and compares them.
func compare(t *testing.T, old, new string) []Finding {
	t.Helper()
	o, err := Parse("old.yaml", []byte(old))
	if err != nil {
		t.Fatalf("old spec: %v", err)
	}
	n, err := Parse("new.yaml", []byte(new))
	if err != nil {
		t.Fatalf("new spec: %v", err)
	}
	return Compare(o, n)
}

type compareCase struct {
	name     string
	old, new string
	want     []string // prefixes of the findings' String(), in order
}

// check runs cases: each finding must start with its want, in order.
func check(t *testing.T, cases []compareCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compare(t, tc.old, tc.new)
			var lines []string
			for _, f := range got {
				lines = append(lines, f.String())
			}
			ok := len(lines) == len(tc.want)
			for i := 0; ok && i < len(lines); i++ {
				ok = strings.HasPrefix(lines[i], tc.want[i])
			}
			if !ok {
				t.Errorf("findings:\n%s\nwant (prefixes):\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestSafeChanges: every change the rules call safe prints nothing.
func TestSafeChanges(t *testing.T) {
	lock := "  l: {kind: lock, path: \"/locks/{shard:int}\"}\n"
	check(t, []compareCase{
		{name: "unchanged", old: doc("", lock), new: doc("", lock)},
		{name: "resource added", old: doc("", lock), new: doc("", lock+"  n: {kind: counter, path: /n}\n")},
		{name: "doc", old: doc("", lock),
			new: doc("", "  l: {kind: lock, path: \"/locks/{shard:int}\", doc: \"One per shard.\"}\n")},
		{name: "go names", old: doc("", lock),
			new: "version: 1\npackage: q\noutput: x/y.go\nemit_interfaces: false\nresources:\n" + lock},
		{name: "layout and delivery defaults written out",
			old: doc("", lock+"  q: {kind: queue, path: /q, item: string}\n"),
			new: doc("", "  l: {kind: lock, path: \"/locks/{shard:int}\", layout: curator}\n  q: {kind: queue, path: /q, item: string, delivery: at_most_once}\n")},
		{name: "block style and comments", old: doc("", lock),
			new: "# the spec\nversion: 1\npackage: p\n\nresources:\n  l:\n    kind: lock # exclusive\n    path: /locks/{shard:int}\n"},
		{name: "parameter renamed", old: doc("", lock), new: doc("", "  l: {kind: lock, path: \"/locks/{s:int}\"}\n")},
		{name: "parameter type", old: doc("", lock), new: doc("", "  l: {kind: lock, path: \"/locks/{shard:string}\"}\n")},
		{name: "parameters renamed in place",
			old: doc("", "  l: {kind: lock, path: \"/l/{a:int}/{b:int}\"}\n"),
			new: doc("", "  l: {kind: lock, path: \"/l/{b2:int}/{a2:int}\"}\n")},
		{name: "root and path trade segments",
			old: doc("root: /app\n", "  l: {kind: lock, path: /locks/x}\n"),
			new: doc("root: /app/locks\n", "  l: {kind: lock, path: /x}\n")},
		{name: "force_after changed",
			old: doc("", "  l: {kind: rwlock, path: /l, revocable: {force_after: 5s}}\n"),
			new: doc("", "  l: {kind: rwlock, path: /l, revocable: {force_after: 1m}}\n")},
		{name: "force_after added to a revocable lock",
			old: doc("", "  l: {kind: lock, path: /l, revocable: true}\n"),
			new: doc("", "  l: {kind: lock, path: /l, revocable: {force_after: 5s}}\n")},
		{name: "advisory revocation turned on", old: doc("", lock),
			new: doc("", "  l: {kind: lock, path: \"/locks/{shard:int}\", revocable: true}\n")},
		{name: "advisory revocation turned off",
			old: doc("", "  l: {kind: lock, path: /l, revocable: true}\n"),
			new: doc("", "  l: {kind: lock, path: /l, revocable: false}\n")},
		{name: "lowest priority appended",
			old: doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal]}\n"),
			new: doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal, bulk, idle]}\n")},
		{name: "priority renamed in place",
			old: doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal]}\n"),
			new: doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [high, normal]}\n")},
		{name: "participants reordered",
			old: doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db, cache]}\n"),
			new: doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [cache, db]}\n")},
		{name: "payload field added",
			old: doc(types, "  q: {kind: queue, path: /q, item: Job}\n"),
			new: doc(strings.Replace(types, "attempt: int", "attempt: int, tags: \"[]string\"", 1), "  q: {kind: queue, path: /q, item: Job}\n")},
		{name: "payload type renamed, fields reordered",
			old: doc(types, "  q: {kind: queue, path: /q, item: Job}\n"),
			new: doc("types:\n  Task: {fields: {attempt: int, name: string}}\n", "  q: {kind: queue, path: /q, item: Task}\n")},
		{name: "raw payloads: bytes, string, not set",
			old: doc("", "  e: {kind: election, path: /e}\n  g: {kind: group, path: /g, member: string}\n  c: {kind: config, path: /c, value: bytes}\n"),
			new: doc("", "  e: {kind: election, path: /e, payload: string}\n  g: {kind: group, path: /g}\n  c: {kind: config, path: /c, value: string}\n")},
		{name: "same go_type", old: doc(types, "  c: {kind: config, path: /c, value: Ext}\n"),
			new: doc("types:\n  Other: {go_type: \"example.com/m.Ext\"}\n", "  c: {kind: config, path: /c, value: Other}\n")},
		{name: "unused type changed", old: doc(types, lock), new: doc("types:\n  Job: {fields: {name: int}}\n", lock)},
		{name: "nested payload field added",
			old: doc("types:\n  A: {fields: {meta: M, all: \"[]M\"}}\n  M: {fields: {owner: string}}\n", "  c: {kind: config, path: /c, value: A}\n"),
			new: doc("types:\n  A: {fields: {meta: M, all: \"[]M\"}}\n  M: {fields: {owner: string, since: time}}\n", "  c: {kind: config, path: /c, value: A}\n")},
		{name: "recursive payload type", old: doc("types:\n  T: {fields: {kids: \"[]T\"}}\n", "  c: {kind: config, path: /c, value: T}\n"),
			new: doc("types:\n  T: {fields: {kids: \"[]T\", n: int}}\n", "  c: {kind: config, path: /c, value: T}\n")},
		{name: "acl widened", old: doc("acl: creator_all\n", lock+"  c: {kind: counter, path: /c, acl: world_read}\n"),
			new: doc("acl: world_read\n", lock+"  c: {kind: counter, path: /c}\n")},
		{name: "acl removed (the open acl)", old: doc("acl: creator_all\n", lock), new: doc("", lock)},
		{name: "digest user widened and added",
			old: doc("", "  c: {kind: counter, path: /c, acl: [{digest: \"a:aGFzaA==\", perms: r}]}\n"),
			new: doc("", "  c: {kind: counter, path: /c, acl: [{digest: \"a:aGFzaA==\", perms: rw}, {digest: \"b:aGFzaA==\", perms: r}]}\n")},
		{name: "digest user covered by everyone",
			old: doc("", "  c: {kind: counter, path: /c, acl: [{digest: \"a:aGFzaA==\", perms: r}]}\n"),
			new: doc("", "  c: {kind: counter, path: /c, acl: world_read}\n")},
	})
}

// TestBreakingChanges: every rule reports its breaking changes, at the
// field in the new spec, with the old value and line.
func TestBreakingChanges(t *testing.T) {
	lock := "  l: {kind: lock, path: \"/locks/{shard:int}\"}\n"
	check(t, []compareCase{
		{name: "root changed", old: doc("root: /a\n", lock), new: doc("root: /b\n", lock),
			want: []string{`new.yaml:3:7: root: breaking: root changed from "/a" (old line 3) to "/b"`}},
		{name: "root dropped", old: doc("root: /a\n", lock), new: doc("", lock),
			want: []string{`new.yaml:1:1: root: breaking: root changed from "/a" (old line 3) to "/" (the default)`}},
		{name: "root set", old: doc("", lock), new: doc("root: /a\n", lock),
			want: []string{`new.yaml:3:7: root: breaking: root changed from "/" (old default) to "/a"`}},
		{name: "root and path changed", old: doc("root: /a\n", lock), new: doc("root: /b\n", "  l: {kind: lock, path: \"/lock/{shard:int}\"}\n"),
			want: []string{`new.yaml:3:7: root: breaking: root changed from "/a" (old line 3) to "/b"`, `new.yaml:5:25: resources.l.path: breaking: path changed from "/locks/{shard:int}" (old line 5) to "/lock/{shard:int}": segment 1 is "lock" instead of "locks"`}},
		{name: "path literal", old: doc("", lock), new: doc("", "  l: {kind: lock, path: \"/lock/{shard:int}\"}\n"),
			want: []string{`new.yaml:4:25: resources.l.path: breaking: path changed from "/locks/{shard:int}" (old line 4) to "/lock/{shard:int}": segment 1 is "lock" instead of "locks"`}},
		{name: "path segment added", old: doc("", lock), new: doc("", "  l: {kind: lock, path: \"/locks/{shard:int}/x\"}\n"),
			want: []string{`new.yaml:4:25: resources.l.path: breaking: path changed from "/locks/{shard:int}" (old line 4) to "/locks/{shard:int}/x": it has 3 segments instead of 2`}},
		{name: "parameter added", old: doc("", lock), new: doc("", "  l: {kind: lock, path: \"/locks/{shard:int}/{n:int}\"}\n"),
			want: []string{`new.yaml:4:25: resources.l.path: breaking: path changed from "/locks/{shard:int}" (old line 4) to "/locks/{shard:int}/{n:int}": it has 3 segments instead of 2`}},
		{name: "literal became a parameter", old: doc("", "  l: {kind: lock, path: /locks/main}\n"), new: doc("", "  l: {kind: lock, path: \"/locks/{name:string}\"}\n"),
			want: []string{`new.yaml:4:25: resources.l.path: breaking: path changed from "/locks/main" (old line 4) to "/locks/{name:string}": segment 2 is parameter name instead of "main"`}},
		{name: "parameter became a literal", old: doc("", lock), new: doc("", "  l: {kind: lock, path: /locks/main}\n"),
			want: []string{`new.yaml:4:25: resources.l.path: breaking: path changed from "/locks/{shard:int}" (old line 4) to "/locks/main": segment 2 is "main" instead of parameter shard`}},
		{name: "parameters reordered",
			old:  doc("", "  l: {kind: lock, path: \"/l/{a:int}/{b:int}\"}\n"),
			new:  doc("", "  l: {kind: lock, path: \"/l/{b:int}/{a:int}\"}\n"),
			want: []string{`new.yaml:4:25: resources.l.path: breaking: path changed from "/l/{a:int}/{b:int}" (old line 4) to "/l/{b:int}/{a:int}": parameter a moved from argument 1 to 2`}},
		{name: "kind", old: doc("", lock), new: doc("", "  l: {kind: rwlock, path: \"/locks/{shard:int}\", layout: kazoo}\n"),
			want: []string{`new.yaml:4:13: resources.l.kind: breaking: kind changed from lock (old line 4) to rwlock`}},
		{name: "layout", old: doc("", lock), new: doc("", "  l: {kind: lock, path: \"/locks/{shard:int}\", layout: kazoo}\n"),
			want: []string{`new.yaml:4:55: resources.l.layout: breaking: layout changed from curator (old default) to kazoo`}},
		{name: "layout back to the default",
			old: doc("", "  l: {kind: rwlock, path: /l, layout: kazoo}\n"), new: doc("", "  l: {kind: rwlock, path: /l}\n"),
			want: []string{`new.yaml:4:3: resources.l.layout: breaking: layout changed from kazoo (old line 4) to curator (the default)`}},
		{name: "election layout", old: doc("", "  e: {kind: election, path: /e}\n"), new: doc("", "  e: {kind: election, path: /e, layout: kazoo}\n"),
			want: []string{`new.yaml:4:41: resources.e.layout: breaking: layout changed from curator (old default) to kazoo`}},
		{name: "semaphore layout", old: doc("", "  s: {kind: semaphore, path: /s, leases: 3, layout: kazoo}\n"), new: doc("", "  s: {kind: semaphore, path: /s, leases: 3}\n"),
			want: []string{`new.yaml:4:3: resources.s.layout: breaking: layout changed from kazoo (old line 4) to curator (the default)`}},
		{name: "counter layout", old: doc("", "  c: {kind: counter, path: /c}\n"), new: doc("", "  c: {kind: counter, path: /c, layout: kazoo}\n"),
			want: []string{`new.yaml:4:40: resources.c.layout: breaking: layout changed from curator (old default) to kazoo`}},
		{name: "group layout", old: doc("", "  g: {kind: group, path: /g}\n"), new: doc("", "  g: {kind: group, path: /g, layout: kazoo}\n"),
			want: []string{`new.yaml:4:38: resources.g.layout: breaking: layout changed from curator (old default) to kazoo`}},
		{name: "leases", old: doc("", "  s: {kind: semaphore, path: /s, leases: 3}\n"),
			new:  doc("", "  s:\n    kind: semaphore\n    path: /s\n    leases: 5\n"),
			want: []string{`new.yaml:7:13: resources.s.leases: breaking: leases changed from 3 (old line 4) to 5`}},
		{name: "size", old: doc("", "  b: {kind: double_barrier, path: /b, size: 3}\n"), new: doc("", "  b: {kind: double_barrier, path: /b, size: 4}\n"),
			want: []string{`new.yaml:4:45: resources.b.size: breaking: size changed from 3 (old line 4) to 4`}},
		{name: "delivery", old: doc("", "  q: {kind: queue, path: /q, item: string}\n"),
			new:  doc("", "  q: {kind: queue, path: /q, item: string, delivery: at_least_once}\n"),
			want: []string{`new.yaml:4:54: resources.q.delivery: breaking: delivery changed from at_most_once (old default) to at_least_once`}},
		{name: "notify", old: doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db], notify: coordinator}\n"),
			new:  doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db]}\n"),
			want: []string{`new.yaml:4:3: resources.tx.notify: breaking: notify changed from coordinator (old line 4) to all (the default)`}},
		{name: "forcing revocation against none",
			old: doc("", "  l: {kind: lock, path: /l}\n"), new: doc("", "  l: {kind: lock, path: /l, revocable: {force_after: 5s}}\n"),
			want: []string{`new.yaml:4:40: resources.l.revocable: breaking: revocable changed from false (old default) to {force_after`}},
		{name: "none against forcing revocation",
			old: doc("", "  l: {kind: rwlock, path: /l, revocable: {force_after: 1m30s}}\n"), new: doc("", "  l: {kind: rwlock, path: /l, revocable: false}\n"),
			want: []string{`new.yaml:4:42: resources.l.revocable: breaking: revocable changed from {force_after`}},
		{name: "priority removed",
			old:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal, bulk]}\n"),
			new:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal]}\n"),
			want: []string{`new.yaml:4:65: resources.q.priorities: breaking: priorities changed from [urgent, normal, bulk] (old line 4) to [urgent, normal]: "bulk" removed`}},
		{name: "priority removed in the middle",
			old:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal, bulk]}\n"),
			new:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, bulk]}\n"),
			want: []string{`new.yaml:4:65: resources.q.priorities: breaking: priorities changed from [urgent, normal, bulk] (old line 4) to [urgent, bulk]: "normal" removed, "bulk" moved from level 2 to 1`}},
		{name: "priorities reordered",
			old:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal]}\n"),
			new:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [normal, urgent]}\n"),
			want: []string{`new.yaml:4:65: resources.q.priorities: breaking: priorities changed from [urgent, normal] (old line 4) to [normal, urgent]: "urgent" moved from level 0 to 1, "normal" moved from level 1 to 0`}},
		{name: "priority inserted",
			old:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, normal]}\n"),
			new:  doc("", "  q: {kind: priority_queue, path: /q, item: string, priorities: [urgent, high, normal]}\n"),
			want: []string{`new.yaml:4:65: resources.q.priorities: breaking: priorities changed from [urgent, normal] (old line 4) to [urgent, high, normal]: "normal" moved from level 1 to 2, "high" inserted at level 1`}},
		{name: "participant added",
			old:  doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db, cache]}\n"),
			new:  doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db, cache, search]}\n"),
			want: []string{`new.yaml:4:57: resources.tx.participants: breaking: participants changed from [db, cache] (old line 4) to [db, cache, search]: "search" added`}},
		{name: "participant renamed",
			old:  doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db, cache]}\n"),
			new:  doc("", "  tx: {kind: two_phase_commit, path: /tx, participants: [db, kv]}\n"),
			want: []string{`new.yaml:4:57: resources.tx.participants: breaking: participants changed from [db, cache] (old line 4) to [db, kv]: "cache" removed, "kv" added`}},
	})
}

// TestPayloadChanges: payload types are compared by structure, for every
// kind that has one.
func TestPayloadChanges(t *testing.T) {
	q := "  q: {kind: queue, path: /q, item: Job}\n"
	withJob := func(fields string) string {
		return doc(strings.Replace(types, "{name: string, attempt: int}", fields, 1), q)
	}
	nested := func(owner string) string {
		return doc("types:\n  A: {fields: {meta: M, all: \"[]M\"}}\n  M: {fields: {owner: "+owner+"}}\n",
			"  c: {kind: config, path: /c, value: A}\n")
	}
	check(t, []compareCase{
		{name: "field removed", old: doc(types, q), new: withJob("{name: string}"),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "attempt" (old line 4) removed or renamed`}},
		{name: "field renamed", old: doc(types, q), new: withJob("{name: string, attempts: int}"),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "attempt" (old line 4) removed or renamed`}},
		{name: "field type", old: doc(types, q), new: withJob("{name: string, attempt: string}"),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "attempt" changed from int (old line 4) to string`}},
		{name: "field int to float", old: doc(types, q), new: withJob("{name: string, attempt: float}"),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "attempt" changed from int (old line 4) to float`}},
		{name: "field becomes a slice", old: doc(types, q), new: withJob("{name: string, attempt: \"[]int\"}"),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "attempt" changed from int (old line 4) to []int`}},
		{name: "field duration to int", old: withJob("{name: string, attempt: duration}"), new: doc(types, q),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "attempt" changed from duration (old line 4) to int`}},
		{name: "field bytes to string", old: withJob("{name: bytes, attempt: int}"), new: doc(types, q),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "name" changed from bytes (old line 4) to string`}},
		{name: "field declared to go_type", old: withJob("{name: string, attempt: int, meta: Meta}"),
			new:  withJob("{name: string, attempt: int, meta: Ext}"),
			want: []string{`new.yaml:8:36: resources.q.item: breaking: item Job: field "meta" changed from Meta (old line 4) to go_type example.com/m.Ext`}},
		{name: "nested field", old: nested("string"), new: nested("int"),
			want: []string{`new.yaml:7:38: resources.c.value: breaking: value A: field "meta.owner" changed from string (old line 5) to int`}},
		{name: "builtin changed",
			old: doc("", "  g: {kind: group, path: /g, member: int}\n"), new: doc("", "  g: {kind: group, path: /g, member: float}\n"),
			want: []string{`new.yaml:4:38: resources.g.member: breaking: member changed from int (old line 4) to float`}},
		{name: "raw to json",
			old: doc(types, "  e: {kind: election, path: /e}\n"), new: doc(types, "  e: {kind: election, path: /e, payload: Job}\n"),
			want: []string{`new.yaml:8:42: resources.e.payload: breaking: payload changed from bytes (old default) to Job`}},
		{name: "declared to builtin",
			old:  doc(types, "  tx: {kind: two_phase_commit, path: /tx, participants: [a], payload: Job}\n"),
			new:  doc(types, "  tx: {kind: two_phase_commit, path: /tx, participants: [a], payload: string}\n"),
			want: []string{`new.yaml:8:71: resources.tx.payload: breaking: payload changed from Job (old line 8) to string`}},
		{name: "declared to go_type",
			old: doc(types, "  c: {kind: config, path: /c, value: Meta}\n"), new: doc(types, "  c: {kind: config, path: /c, value: Ext}\n"),
			want: []string{`new.yaml:8:38: resources.c.value: breaking: value changed from Meta (old line 8) to go_type example.com/m.Ext`}},
		{name: "go_type changed",
			old:  doc(types, "  c: {kind: config, path: /c, value: Ext}\n"),
			new:  doc(strings.Replace(types, "m.Ext", "m.Ext2", 1), "  c: {kind: config, path: /c, value: Ext}\n"),
			want: []string{`new.yaml:8:38: resources.c.value: breaking: value changed from go_type example.com/m.Ext (old line 8) to go_type example.com/m.Ext2`}},
		{name: "one type, every user",
			old:  doc(types, "  q: {kind: priority_queue, path: /q, item: Job, priorities: [a]}\n  g: {kind: group, path: /g, member: Job}\n"),
			new:  doc(strings.Replace(types, "attempt: int", "attempt: bool", 1), "  q: {kind: priority_queue, path: /q, item: Job, priorities: [a]}\n  g: {kind: group, path: /g, member: Job}\n"),
			want: []string{`new.yaml:8:45: resources.q.item: breaking: item Job: field "attempt" changed from int (old line 4) to bool`, `new.yaml:9:38: resources.g.member: breaking: member Job: field "attempt" changed from int (old line 4) to bool`}},
	})
}

// TestACLChanges: a narrowed ACL, the resource's own or the top-level one,
// breaks.
func TestACLChanges(t *testing.T) {
	c := "  c: {kind: counter, path: /c}\n"
	digest := func(id, perms string) string {
		return doc("", "  c: {kind: counter, path: /c, acl: [{digest: \""+id+"\", perms: "+perms+"}]}\n")
	}
	check(t, []compareCase{
		{name: "open to creator_all", old: doc("", c), new: doc("", "  c: {kind: counter, path: /c, acl: creator_all}\n"),
			want: []string{`new.yaml:4:37: resources.c.acl: breaking: acl narrowed from no acl (everyone, every permission) to creator_all: it no longer grants everyone rwcda`}},
		{name: "world_all to world_read", old: doc("acl: world_all\n", c), new: doc("acl: world_read\n", c),
			want: []string{`new.yaml:3:6: resources.c.acl: breaking: acl narrowed from world_all (old line 3) to world_read (the top-level acl): it no longer grants everyone wcda`}},
		{name: "top-level narrowed", old: doc("acl: world_read\n", c+"  d: {kind: counter, path: /d, acl: world_all}\n"),
			new:  doc("acl: creator_all\n", c+"  d: {kind: counter, path: /d, acl: world_all}\n"),
			want: []string{`new.yaml:3:6: resources.c.acl: breaking: acl narrowed from world_read (old line 3) to creator_all (the top-level acl): it no longer grants everyone r`}},
		{name: "digest perms", old: digest("a:aGFzaA==", "rw"), new: digest("a:aGFzaA==", "r"),
			want: []string{`new.yaml:4:37: resources.c.acl: breaking: acl narrowed from [a:aGFzaA== rw] (old line 4) to [a:aGFzaA== r]: it no longer grants digest a:aGFzaA== w`}},
		{name: "digest password", old: digest("a:aGFzaA==", "r"), new: digest("a:b3RoZXI=", "r"),
			want: []string{`new.yaml:4:37: resources.c.acl: breaking: acl narrowed from [a:aGFzaA== r] (old line 4) to [a:b3RoZXI= r]: it no longer grants digest a:aGFzaA== r`}},
		{name: "creator to digest", old: doc("", "  c: {kind: counter, path: /c, acl: creator_all}\n"), new: digest("a:aGFzaA==", "rwcda"),
			want: []string{`new.yaml:4:37: resources.c.acl: breaking: acl narrowed from creator_all (old line 4) to [a:aGFzaA== rwcda]: it no longer grants the authenticated creator rwcda`}},
		{name: "digest to creator", old: digest("a:aGFzaA==", "rwcda"), new: doc("", "  c: {kind: counter, path: /c, acl: creator_all}\n"),
			want: []string{`new.yaml:4:37: resources.c.acl: breaking: acl narrowed from [a:aGFzaA== rwcda] (old line 4) to creator_all: it no longer grants digest a:aGFzaA== rwcda`}},
	})
}

// TestRemovedResources: a removed resource is a warning without a
// position, after the other findings; a new resource of another kind on its
// nodes breaks.
func TestRemovedResources(t *testing.T) {
	a := "  a: {kind: lock, path: /a}\n"
	b := "  b: {kind: semaphore, path: /b, leases: 2}\n"
	check(t, []compareCase{
		{name: "removed", old: doc("", a+b), new: doc("", b),
			want: []string{`new.yaml: resources.a: warning: removed (old line 4)`}},
		{name: "renamed, same kind and path", old: doc("", a+b), new: doc("", "  a2: {kind: lock, path: /a}\n"+b),
			want: []string{`new.yaml: resources.a: warning: removed (old line 4); new resource a2 (line 4) has its kind and path: if it is a rename, nothing else may change`}},
		{name: "renamed, same path with parameters", old: doc("", "  a: {kind: lock, path: \"/a/{x:int}\"}\n"),
			new:  doc("", "  a2: {kind: lock, path: \"/a/{y:string}\"}\n"),
			want: []string{`new.yaml: resources.a: warning: removed (old line 4); new resource a2 (line 4) has its kind and path: if it is a rename, nothing else may change`}},
		{name: "renamed, other path", old: doc("", a+b), new: doc("", "  a2: {kind: lock, path: /a2}\n"+b),
			want: []string{`new.yaml: resources.a: warning: removed (old line 4)`}},
		{name: "its nodes taken by another kind", old: doc("", a+b), new: doc("", "  a2: {kind: rwlock, path: /a}\n"+b),
			want: []string{`new.yaml:4:14: resources.a2.kind: breaking: new resource a2 uses the nodes of removed resource a (old line 4) as a rwlock`, `new.yaml: resources.a: warning: removed (old line 4)`}},
		{name: "all sorted", old: doc("", "  z: {kind: counter, path: /z}\n"+a+b),
			new:  doc("", "  b: {kind: semaphore, path: /b, leases: 3}\n  a: {kind: lock, path: /a, layout: kazoo}\n"),
			want: []string{`new.yaml:4:42: resources.b.leases: breaking: leases changed from 2 (old line 6) to 3`, `new.yaml:5:37: resources.a.layout: breaking: layout changed from curator (old default) to kazoo`, `new.yaml: resources.z: warning: removed (old line 4)`}},
	})
}

// TestFinding pins one whole finding, its text and its JSON.
func TestFinding(t *testing.T) {
	old := doc("", "  other: {kind: counter, path: /o}\n  gone: {kind: counter, path: /g}\n  slots: {kind: semaphore, path: /s, leases: 3}\n")
	new := doc("", "  other: {kind: counter, path: /o}\n  slots: {kind: semaphore, path: /s, leases: 5}\n")
	got := compare(t, old, new)
	if len(got) != 2 {
		t.Fatalf("got %d findings, want 2: %v", len(got), got)
	}
	const want = "new.yaml:5:46: resources.slots.leases: breaking: leases changed from 3 (old line 6) to 5: " +
		"old and new processes would admit different numbers of holders at once"
	if s := got[0].String(); s != want {
		t.Errorf("String:\n%s\nwant:\n%s", s, want)
	}
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `[{"file":"new.yaml","line":5,"col":46,"path":"resources.slots.leases","severity":"breaking",` +
		`"message":"leases changed from 3 (old line 6) to 5: old and new processes would admit different numbers of holders at once",` +
		`"old":"3","new":"5"},` +
		`{"file":"new.yaml","line":0,"col":0,"path":"resources.gone","severity":"warning","message":"removed (old line 5)",` +
		`"old":"counter /g","new":""}]`
	if string(data) != wantJSON {
		t.Errorf("JSON:\n%s\nwant:\n%s", data, wantJSON)
	}
}

// TestParseError: a broken spec gives the spec package's errors.
func TestParseError(t *testing.T) {
	_, err := Parse("bad.yaml", []byte("version: 1\npackage: p\nresources:\n  s: {kind: semaphore, path: /s}\n"))
	var es spec.Errors
	if !errors.As(err, &es) || es.Error() != `bad.yaml:4:3: resources.s: missing required field "leases" for kind semaphore` {
		t.Errorf("Parse: %v", err)
	}
}

// TestLocate: positions follow aliases and merge keys as the spec package
// reads them.
func TestLocate(t *testing.T) {
	src := `version: 1
package: p
root: &r /app
resources:
  base: &base {kind: semaphore, path: /base, leases: 3, doc: &d text}
  a:
    <<: *base
    path: /a
  b:
    <<: [{leases: 4}, *base]
    path: /b
    kind: semaphore
  c: {kind: counter, path: /c, doc: *d}
`
	v, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]spec.Pos{
		"root":                    {Line: 3, Col: 7},
		"resources.a.kind":        {Line: 5, Col: 22},
		"resources.a.leases":      {Line: 5, Col: 54},
		"resources.a.path":        {Line: 8, Col: 11},
		"resources.b.leases":      {Line: 10, Col: 19},
		"resources.b.kind":        {Line: 12, Col: 11},
		"resources.c.doc":         {Line: 13, Col: 37},
		"resources.c.nonexistent": {},
	} {
		if got := v.pos[field]; got != want {
			t.Errorf("%s at %v, want %v", field, got, want)
		}
	}
	if v.Spec.Resources[2].Leases != 4 {
		t.Errorf("b has %d leases; the spec package reads merge keys otherwise", v.Spec.Resources[1].Leases)
	}
}

// TestRulesTable: the table is well formed; Rules returns a copy.
func TestRulesTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		key := r.Field
		for _, k := range r.Kinds {
			key += " " + string(k)
		}
		if seen[key] {
			t.Errorf("rule %q twice", key)
		}
		seen[key] = true
		if r.Breaks == "" && r.Safe == "" {
			t.Errorf("rule %q says nothing", key)
		}
		if !r.TopLevel && !slices.Contains(commonFields, r.Field) && len(r.Kinds) == 0 {
			t.Errorf("rule %q is about a field no kind has", key)
		}
		if r.TopLevel && (r.check != nil || r.Kinds != nil) {
			t.Errorf("top-level rule %q has a check or kinds", key)
		}
		if !r.TopLevel && r.Breaks != "" && r.check == nil && r.Field != "kind" {
			t.Errorf("rule %q reports changes but has no check", key)
		}
	}
	Rules()[0].Field = "changed"
	if rules[0].Field == "changed" {
		t.Error("Rules returns the table itself")
	}
}

// TestServiceChanges: a service's instance payload follows the payload
// rules, except that bytes and string differ (the payload is JSON); its
// name and its base move its instances; a second service on the base is
// safe.
func TestServiceChanges(t *testing.T) {
	svc := func(fields string) string {
		return doc(strings.Replace(types, "{name: string, attempt: int}", fields, 1), "  pay: {kind: service, path: /services, instance: Job}\n")
	}
	raw := func(instance, extra string) string {
		return doc("", "  pay: {kind: service, path: /services, instance: "+instance+extra+"}\n")
	}
	check(t, []compareCase{
		{name: "instance field added", old: svc("{name: string}"), new: svc("{name: string, attempt: int}")},
		{name: "second service on the base", old: raw("string", ""),
			new: raw("string", "") + "  orders: {kind: service, path: /services, instance: string}\n"},
		{name: "default name written out", old: raw("string", ""), new: raw("string", ", name: pay")},
		{name: "instance field removed", old: svc("{name: string, attempt: int}"), new: svc("{name: string}"),
			want: []string{`new.yaml:8:51: resources.pay.instance: breaking: instance Job: field "attempt" (old line 4) removed or renamed`}},
		{name: "instance bytes to string", old: raw("bytes", ""), new: raw("string", ""),
			want: []string{`new.yaml:4:51: resources.pay.instance: breaking: instance changed from bytes (old line 4) to string`}},
		{name: "name", old: raw("string", ""), new: raw("string", ", name: payments"),
			want: []string{`new.yaml:4:65: resources.pay.name: breaking: name changed from "pay" (old default) to "payments"`}},
		{name: "base", old: raw("string", ""), new: doc("", "  pay: {kind: service, path: /svc, instance: string}\n"),
			want: []string{`new.yaml:4:30: resources.pay.path: breaking: path changed from "/services" (old line 4) to "/svc"`}},
	})
}
