package breaking

import (
	_ "encoding/json"
	_ "errors"
	"strings"
	"testing"

	_ "github.com/zkgen/zkgen/spec"
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
