package breaking

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkgen/zkgen/spec"
)

// Rule is one decision of the comparison: which changes of a field break
// coordination between old and new processes, and which are safe. The
// rules table covers every field of every kind of spec/kinds.go
// (golden/coverage_test.go checks it); docs/deploy-safety.md shows it.
type Rule struct {
	// Field is the spec field: a resource field ("leases"), a top-level
	// one when TopLevel is set ("root"), or "" for the row that says a
	// kind has no fields of its own.
	Field string
	// TopLevel marks a rule about the spec's top-level keys.
	TopLevel bool
	// Kinds are the kinds whose field it is, from the kinds table: every
	// kind with a field of that name (a rule is about a field, whatever
	// kind has it), or, for the row without a field, every kind with no
	// fields of its own; nil for the fields every kind has (kind, path,
	// doc, acl) and for top-level keys.
	Kinds []spec.Kind
	// Breaks says which changes are reported as breaking; "" when none is.
	Breaks string
	// Safe says which changes are safe; "" when none is.
	Safe string

	// check compares the field of one resource; nil for top-level keys
	// (compared by Compare itself) and for rows without a field.
	check func(c *comparison, o, n *spec.Resource)
}

// appliesTo reports whether r is a resource rule for kind k.
func (r Rule) appliesTo(k spec.Kind) bool {
	return !r.TopLevel && (r.Kinds == nil || slices.Contains(r.Kinds, k))
}

// Rules returns the rules table, in the order docs/deploy-safety.md shows it.
func Rules() []Rule { return slices.Clone(rules) }

// commonFields are the fields every kind has.
var commonFields = []string{"kind", "path", "doc", "acl"}

// withKinds fills each resource rule's Kinds from the kinds table, so that a
// new kind whose fields have rules already needs none of its own.
func withKinds(rs []Rule) []Rule {
	for i, r := range rs {
		if r.TopLevel || slices.Contains(commonFields, r.Field) {
			continue
		}
		for _, k := range spec.Kinds {
			info, _ := k.Info()
			if r.Field == "" && len(info.Fields) == 0 || r.Field != "" && slices.Contains(info.Fields, r.Field) {
				rs[i].Kinds = append(rs[i].Kinds, k)
			}
		}
	}
	return rs
}

// The texts of the payload rules, shared by every payload field.
const (
	payloadBreaks = "another type: a field removed, renamed or retyped (also in nested declared types; `[]T` against `T`), " +
		"another builtin (`bytes`, `string` and not set are alike), declared fields against a `go_type`, another `go_type`"
	payloadSafe = "adding a field; renaming the type or reordering its fields (compared by structure and JSON name); " +
		"`bytes`, `string` and not set (all stored raw)"
)

var rules = withKinds([]Rule{
	{Field: "root", TopLevel: true,
		Breaks: "any change that moves the nodes of a resource both versions declare",
		Safe:   "moving segments between `root` and the resource paths so that every full path stays the same"},
	{Field: "package, output, emit_interfaces", TopLevel: true,
		Safe: "any change: they shape the generated Go code only"},
	{Field: "durations", TopLevel: true,
		Safe: "any change: code generated with either setting reads both formats (only code generated before zkgen stored durations as strings reads integers alone)"},
	{Field: "types", TopLevel: true,
		Breaks: "through the payload fields of the resources that use a type (`item`, `payload`, `member`, `value`, `instance`)",
		Safe:   "changing a type no resource uses"},
	{Field: "kind",
		Breaks: "any change (the recipes name and use their nodes differently)",
		check:  nil, // Compare compares kinds before any rule runs
	},
	{Field: "path", check: checkPath,
		Breaks: "a literal segment changed, added or removed; a parameter added, removed or moved; " +
			"parameters reordered; a literal replaced by a parameter or the other way round",
		Safe: "renaming a parameter; changing its type between `int` and `string` (an int is written " +
			"in decimal, as a caller passing the same number as a string would write it)"},
	{Field: "doc", Safe: "any change"},
	{Field: "acl", check: checkACL,
		Breaks: "narrowed: an identity (everyone, the authenticated creator, a digest user) loses a permission, " +
			"so old processes would be refused on the nodes new ones create; a change between the creator and " +
			"digest users (zkgen cannot tell who the creator is)",
		Safe: "widened or unchanged grants (also through the top-level `acl` a resource inherits)"},
	{Field: "revocable", check: checkRevocable,
		Breaks: "one version forces revocation (`force_after`) and the other is not revocable: a non-revocable " +
			"holder never sees the request, yet the forcing process deletes its node",
		Safe: "changing `force_after`; turning revocation without `force_after` on or off (a request is advisory)"},
	{Field: "layout", check: checkLayout,
		Breaks: "any change (curator and kazoo name lock, lease, candidate and member nodes differently and ignore each other's; a counter's stored width differs)"},
	{Field: "leases", check: checkLeases,
		Breaks: "any change (each process admits its own count of holders)"},
	{Field: "ttl", check: checkTTL,
		Breaks: "lengthened (a new process that takes back a lease created by an old one counts the longer TTL, " +
			"while the server removes the node after the shorter one it was created with)",
		Safe: "shortened (every holder then counts a TTL no longer than its node's)"},
	{Field: "item", check: payload("item", itemOf),
		Breaks: payloadBreaks, Safe: payloadSafe},
	{Field: "delivery", check: checkDelivery,
		Breaks: "any change (at-most-once consumers ignore at-least-once claims and take claimed items)"},
	{Field: "dead_letter_after",
		Safe: "any change: every consumer counts deliveries in the same attempts nodes and applies its own limit, " +
			"so during a rollout an item moves after the old or the new count; lowering it moves items already " +
			"delivered that often at their next claim; removing it leaves the dead letters listed by `DeadLetters`"},
	{Field: "prefetch",
		Safe: "any change: consumers with different prefetches share the queue (a chunk claim only excludes consumers of the same prefetch; " +
			"others take its items one by one), and items a consumer holds go back when its session closes"},
	{Field: "priorities", check: checkPriorities,
		Breaks: "a level removed, inserted or moved (an item carries its level's number)",
		Safe:   "appending a lowest level; renaming a level in place"},
	{Field: "size", check: checkSize,
		Breaks: "any change (each process waits for its own count)"},
	{Field: "participants", check: checkParticipants,
		Breaks: "a participant added, removed or renamed (vote nodes are named after them; every process must list the same ones)",
		Safe:   "reordering them"},
	{Field: "payload", check: payload("payload", payloadOf),
		Breaks: payloadBreaks, Safe: payloadSafe},
	{Field: "notify", check: checkNotify,
		Breaks: "any change (with `coordinator` only the proposer publishes the decision; with `all` nobody waits for it to)"},
	{Field: "partitions", check: checkPartitions,
		Breaks: "any change (each process deals out its own count of partitions)"},
	{Field: "names", Safe: "any change (partitions are numbered; names only label them in the generated code)"},
	{Field: "member", check: payload("member", memberOf),
		Breaks: payloadBreaks, Safe: payloadSafe},
	{Field: "value", check: payload("value", valueOf),
		Breaks: payloadBreaks, Safe: payloadSafe},
	{Field: "instance", check: checkInstance,
		Breaks: "another type: a field removed, renamed or retyped (also in nested declared types; `[]T` against `T`), " +
			"another builtin (`bytes` against `string` too: the payload is JSON, where bytes are base64), declared fields against a `go_type`, another `go_type`",
		Safe: "adding a field; renaming the type or reordering its fields (compared by structure and JSON name)"},
	{Field: "name", check: checkServiceName,
		Breaks: "any change, also to or from the default (the resource's name): the instances are `<path>/<name>/<id>`, so old and new processes would not find each other's"},
	{Field: "",
		Safe: "no fields of their own: only the rules of `kind`, `path`, `doc` and `acl` apply"},
})

func checkLayout(c *comparison, o, n *spec.Resource) {
	if o.Layout == n.Layout {
		return
	}
	why := "old and new processes would name their lock nodes differently and not see each other's"
	switch n.Kind {
	case spec.KindSemaphore:
		why = "old and new processes would count leases in different nodes and admit too many holders"
	case spec.KindElection:
		why = "old and new processes would name their candidate nodes differently and elect two leaders"
	case spec.KindGroup:
		why = "old and new processes would name their member nodes differently, and kazoo's Party sees only one of the two"
	case spec.KindCounter:
		why = "old and new processes would store the counter in different widths (8 and 4 bytes) and fail to read each other's"
	}
	c.changed(o, n, "layout", string(o.Layout), string(n.Layout), why)
}

func checkLeases(c *comparison, o, n *spec.Resource) {
	if o.Leases != n.Leases {
		c.changed(o, n, "leases", strconv.Itoa(o.Leases), strconv.Itoa(n.Leases),
			"old and new processes would admit different numbers of holders at once")
	}
}

func checkTTL(c *comparison, o, n *spec.Resource) {
	if n.TTL > o.TTL {
		c.changed(o, n, "ttl", o.TTL.String(), n.TTL.String(),
			"a new holder taking back an old holder's lease would count the longer TTL while the server removes the node after the shorter")
	}
}

func checkSize(c *comparison, o, n *spec.Resource) {
	if o.Size != n.Size {
		c.changed(o, n, "size", strconv.Itoa(o.Size), strconv.Itoa(n.Size),
			"old and new processes would wait for different numbers of participants")
	}
}

func checkPartitions(c *comparison, o, n *spec.Resource) {
	if o.Partitions != n.Partitions {
		c.changed(o, n, "partitions", strconv.Itoa(o.Partitions), strconv.Itoa(n.Partitions),
			"old and new processes would deal out different partitions (the runtime refuses the newcomers: ErrSpecMismatch)")
	}
}

func checkDelivery(c *comparison, o, n *spec.Resource) {
	if o.Delivery != n.Delivery {
		c.changed(o, n, "delivery", string(o.Delivery), string(n.Delivery),
			"at-most-once consumers ignore the claims of at-least-once ones, so an item could be delivered twice or lost")
	}
}

func checkNotify(c *comparison, o, n *spec.Resource) {
	if o.Notify != n.Notify {
		c.changed(o, n, "notify", string(o.Notify), string(n.Notify),
			"with notify coordinator only the proposer publishes the decision, so a participant could wait for a decision nobody writes")
	}
}

// checkRevocable reports a version that forces revocation against one that
// is not revocable.
func checkRevocable(c *comparison, o, n *spec.Resource) {
	forces := func(r *spec.Resource) bool { return r.Revocable && r.ForceAfter > 0 }
	if forces(o) && !n.Revocable || forces(n) && !o.Revocable {
		c.changed(o, n, "revocable", revocation(o), revocation(n),
			"a holder that is not revocable never sees a revocation request, yet a process that forces revocation deletes its node after force_after")
	}
}

// revocation is the revocable setting as the spec writes it.
func revocation(r *spec.Resource) string {
	switch {
	case r.Revocable && r.ForceAfter > 0:
		return "{force_after: " + fmtDuration(r.ForceAfter) + "}"
	case r.Revocable:
		return "true"
	}
	return "false"
}

// fmtDuration writes d the short way: 5s, not 5.000s; 1m30s, not 1m30.0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkPriorities reports levels removed, inserted or moved: an item's node
// name carries its level's index, so every old level must keep its index.
// A level renamed in place (its old name gone, its new name new) keeps its
// index; appended levels are new to old processes, which serve them last.
func checkPriorities(c *comparison, o, n *spec.Resource) {
	oldIdx, newIdx := indexOf(o.Priorities), indexOf(n.Priorities)
	var why []string
	for i, p := range o.Priorities {
		j, kept := newIdx[p.Name]
		if kept && j != i {
			why = append(why, fmt.Sprintf("%q moved from level %d to %d", p.Name, i, j))
		}
		if !kept && (i >= len(n.Priorities) || has(oldIdx, n.Priorities[i].Name)) {
			why = append(why, fmt.Sprintf("%q removed", p.Name))
		}
	}
	for j, p := range n.Priorities {
		if !has(oldIdx, p.Name) && j < len(o.Priorities) && has(newIdx, o.Priorities[j].Name) {
			why = append(why, fmt.Sprintf("%q inserted at level %d", p.Name, j))
		}
	}
	if len(why) > 0 {
		c.changed(o, n, "priorities", names(o.Priorities), names(n.Priorities), strings.Join(why, ", ")+
			"; an item carries its level's number, so old and new processes would serve it at different priorities (only appending a lowest level is safe)")
	}
}

func has(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// checkParticipants reports a changed set of participants; their order
// does not matter.
func checkParticipants(c *comparison, o, n *spec.Resource) {
	oldIdx, newIdx := indexOf(o.Participants), indexOf(n.Participants)
	var why []string
	for _, p := range o.Participants {
		if _, ok := newIdx[p.Name]; !ok {
			why = append(why, fmt.Sprintf("%q removed", p.Name))
		}
	}
	for _, p := range n.Participants {
		if _, ok := oldIdx[p.Name]; !ok {
			why = append(why, fmt.Sprintf("%q added", p.Name))
		}
	}
	if len(why) > 0 {
		c.changed(o, n, "participants", names(o.Participants), names(n.Participants), strings.Join(why, ", ")+
			"; every process of a transaction must list the same participants (one vote node each), so old and new processes would decide differently")
	}
}

func indexOf(ns []spec.Name) map[string]int {
	m := make(map[string]int, len(ns))
	for i, n := range ns {
		m[n.Name] = i
	}
	return m
}

// names writes a list of names as the spec's flow style does: [a, b].
func names(ns []spec.Name) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.Name
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// checkInstance is the payload check of a service's instance, where bytes
// and string are not alike: Curator's JSON holds the payload as a JSON
// value, bytes as base64 text.
func checkInstance(c *comparison, o, n *spec.Resource) {
	if isRaw(o.Instance) && isRaw(n.Instance) && !sameRef(o.Instance, n.Instance) {
		c.changed(o, n, "instance", refText(o.Instance), refText(n.Instance),
			"the payload is JSON: old and new processes would read each other's as base64 or fail to decode it")
		return
	}
	payload("instance", func(r *spec.Resource) *spec.TypeRef { return r.Instance })(c, o, n)
}

// checkServiceName reports a service whose name changed: its instances
// move to another node (checkPath compares the base alone).
func checkServiceName(c *comparison, o, n *spec.Resource) {
	if o.ServiceName != n.ServiceName {
		c.changed(o, n, "name", strconv.Quote(o.ServiceName), strconv.Quote(n.ServiceName),
			"old and new processes would register and look for the instances under different nodes")
	}
}
