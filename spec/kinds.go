package spec

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file is the one place that knows the resource kinds of the spec
// format: their names, the fields each takes and requires, their defaults,
// how each kind-specific field is decoded and what shapes a resource when
// it is drawn. The generator (templates), the live commands
// (internal/inspect) and the drawings (internal/graph) look kinds up here;
// golden/coverage_test.go fails when a kind lacks any of them.

// Kind is the kind of a declared resource.
type Kind string

// The resource kinds of the spec format.
const (
	KindLock           Kind = "lock"
	KindRWLock         Kind = "rwlock"
	KindSemaphore      Kind = "semaphore"
	KindLease          Kind = "lease"
	KindQueue          Kind = "queue"
	KindPriorityQueue  Kind = "priority_queue"
	KindDelayQueue     Kind = "delay_queue"
	KindBarrier        Kind = "barrier"
	KindDoubleBarrier  Kind = "double_barrier"
	KindTwoPhaseCommit Kind = "two_phase_commit"
	KindElection       Kind = "election"
	KindGroup          Kind = "group"
	KindConfig         Kind = "config"
	KindCounter        Kind = "counter"
	KindPartitioner    Kind = "partitioner"
	KindService        Kind = "service"
)

// Layout is the node naming (and stored format) a resource shares with
// another library's recipe: of a lock, rwlock, semaphore, election, group
// or counter (field layout).
type Layout string

// The layouts; LayoutCurator is the default.
const (
	LayoutCurator Layout = "curator" // Apache Curator's node names
	LayoutKazoo   Layout = "kazoo"   // Python kazoo's node names
)

// Layouts lists the valid layouts, the default first.
var Layouts = []Layout{LayoutCurator, LayoutKazoo}

// MaxPartitions is the most partitions a partitioner may declare: the
// runtime's runtime.MaxPartitions (its plan and the listing of its owner
// nodes must fit ZooKeeper's 1 MiB jute.maxbuffer).
const MaxPartitions = 65536

// Delivery is the delivery guarantee of a queue (field delivery).
type Delivery string

// The deliveries; AtMostOnce is the default.
const (
	AtMostOnce  Delivery = "at_most_once"  // a take removes the item
	AtLeastOnce Delivery = "at_least_once" // a take claims the item until it is acked
)

// Deliveries lists the valid deliveries, the default first.
var Deliveries = []Delivery{AtMostOnce, AtLeastOnce}

// Notify says who watches a two-phase commit's votes (field notify).
type Notify string

// The notify settings; NotifyAll is the default.
const (
	NotifyAll         Notify = "all"         // every participant watches the votes
	NotifyCoordinator Notify = "coordinator" // only the proposing handle does
)

// Notifies lists the valid notify settings, the default first.
var Notifies = []Notify{NotifyAll, NotifyCoordinator}

// Resource is one declared coordination resource. Its kind-specific
// fields are set only for the kinds that take them (see the kinds table).
type Resource struct {
	Pos      Pos    // position of the resource's key (its name)
	KindPos  Pos    // position of the kind value
	Name     string // snake_case as declared
	GoName   string // CamelCase Go identifier (method on the client)
	Kind     Kind
	Path     string    // as written, relative to Root, starting with "/"
	FullPath string    // Root + Path
	Segments []Segment // of FullPath, without the leading empty segment
	Params   []*Param  // the parameters of Segments in order
	Doc      string
	ACL      *ACL // its own acl, else the top-level one; nil when neither is set

	// lock, rwlock
	Revocable  bool
	ForceAfter time.Duration // 0 when revocable without forcing
	// lock, rwlock, semaphore, election, group, counter
	Layout Layout // LayoutCurator (default) or LayoutKazoo

	// semaphore, lease
	Leases int

	// lease
	TTL time.Duration // how long a lease lasts unless renewed

	// queue, priority_queue, delay_queue
	Item       *TypeRef
	Delivery   Delivery // AtMostOnce (default) or AtLeastOnce
	Priorities []Name
	// DeadLetterAfter is how many deliveries without an ack move an item
	// to the dead letters (at_least_once only); 0 when not set.
	DeadLetterAfter    int
	DeadLetterAfterPos Pos // position of its value
	// Prefetch is how many items a consumer of an at-most-once FIFO queue
	// takes at a time and serves from memory (0 or 1: one).
	Prefetch    int
	PrefetchPos Pos // position of its value

	// double_barrier
	Size int

	// two_phase_commit
	Participants []Name
	Payload      *TypeRef // also election
	Notify       Notify   // NotifyAll (default) or NotifyCoordinator

	// group, partitioner
	Member *TypeRef

	// partitioner
	Partitions     int
	PartitionNames []Name // empty, or one per partition

	// config
	Value *TypeRef

	// service: Path is the base of Curator's service discovery, under
	// which the service's instances are <base>/<ServiceName>/<id>;
	// FullPath and Segments name the service's own node <base>/<ServiceName>.
	Instance    *TypeRef // the payload of each instance
	ServiceName string   // the name field, else the resource's name
	Base        string   // Root + Path: the base path of the discovery
}

// Name is a declared name inside a resource (a priority or participant) with
// the Go constant it becomes (priority urgent of tasks -> TasksUrgent).
type Name struct {
	Name   string
	GoName string
}

// KindInfo is one row of the kinds table: what the spec format knows of a
// kind.
type KindInfo struct {
	Kind Kind
	// Doc says what a resource of the kind is, in a few words.
	Doc string
	// Example is a resource of the kind as one line of YAML,
	// "name: {kind: ..., ...}"; zkgen init's starter spec shows it.
	Example string
	// Fields are the fields the kind takes besides the common ones (kind,
	// path, doc, acl), in documentation order.
	Fields []string
	// Required are the fields of Fields that the kind requires.
	Required []string
	// Defaults fills in the defaults of the kind's fields; nil when none
	// has a default.
	Defaults func(r *Resource)
	// Settings describes what shapes a resource of the kind beyond its kind
	// and path, one short phrase each ("leases: 3"), as zkgen graph labels
	// it. It is never nil; a kind with nothing to show returns nil.
	Settings func(r *Resource) []string
}

// kindTable is the kinds table, in the order the documentation presents
// the kinds.
var kindTable = []KindInfo{
	{
		Kind:     KindLock,
		Doc:      "an exclusive lock",
		Example:  `order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}`,
		Fields:   []string{"revocable", "layout"},
		Defaults: layoutDefaults,
		Settings: lockSettings,
	},
	{
		Kind:     KindRWLock,
		Doc:      "a read/write lock",
		Example:  `table_lock: {kind: rwlock, path: "/locks/tables/{table:string}", revocable: {force_after: 5s}}`,
		Fields:   []string{"revocable", "layout"},
		Defaults: layoutDefaults,
		Settings: lockSettings,
	},
	{
		Kind:     KindSemaphore,
		Doc:      "a counting semaphore",
		Example:  `slots: {kind: semaphore, path: /semaphores/slots, leases: 3}`,
		Fields:   []string{"leases", "layout"},
		Required: []string{"leases"},
		Defaults: layoutDefaults,
		Settings: func(r *Resource) []string {
			return append([]string{fmt.Sprintf("leases: %d", r.Leases)}, layoutSettings(r)...)
		},
	},
	{
		Kind:     KindLease,
		Doc:      "leases not tied to a session, ended by a TTL",
		Example:  `leases: {kind: lease, path: /leases/workers, ttl: 30s, leases: 2}`,
		Fields:   []string{"ttl", "leases"},
		Required: []string{"ttl", "leases"},
		Settings: func(r *Resource) []string {
			return []string{fmt.Sprintf("leases: %d", r.Leases), "ttl: " + r.TTL.String()}
		},
	},
	{
		Kind:     KindQueue,
		Doc:      "a FIFO queue",
		Example:  `jobs: {kind: queue, path: /queues/jobs, item: Job}`,
		Fields:   []string{"item", "delivery", "dead_letter_after", "prefetch"},
		Required: []string{"item"},
		Defaults: queueDefaults,
		Settings: queueSettings,
	},
	{
		Kind:     KindPriorityQueue,
		Doc:      "a priority queue",
		Example:  `tasks: {kind: priority_queue, path: /queues/tasks, item: Job, priorities: [urgent, normal, bulk]}`,
		Fields:   []string{"item", "priorities", "delivery", "dead_letter_after"},
		Required: []string{"item", "priorities"},
		Defaults: queueDefaults,
		Settings: queueSettings,
	},
	{
		Kind:     KindDelayQueue,
		Doc:      "a delay queue (items taken once due)",
		Example:  `reminders: {kind: delay_queue, path: /queues/reminders, item: Job}`,
		Fields:   []string{"item", "delivery", "dead_letter_after"},
		Required: []string{"item"},
		Defaults: queueDefaults,
		Settings: queueSettings,
	},
	{
		Kind:     KindBarrier,
		Doc:      "a barrier",
		Example:  `start: {kind: barrier, path: "/barriers/start/{run:string}"}`,
		Settings: noSettings,
	},
	{
		Kind:     KindDoubleBarrier,
		Doc:      "a double barrier",
		Example:  `epoch: {kind: double_barrier, path: "/barriers/epoch/{n:int}", size: 3}`,
		Fields:   []string{"size"},
		Required: []string{"size"},
		Settings: func(r *Resource) []string { return []string{fmt.Sprintf("size: %d", r.Size)} },
	},
	{
		Kind:     KindTwoPhaseCommit,
		Doc:      "a two-phase commit",
		Example:  `deploy: {kind: two_phase_commit, path: "/tx/deploy/{id:string}", participants: [database, cache]}`,
		Fields:   []string{"participants", "payload", "notify"},
		Required: []string{"participants"},
		Defaults: func(r *Resource) { r.Notify = cmp.Or(r.Notify, NotifyAll) },
		Settings: twoPhaseCommitSettings,
	},
	{
		Kind:     KindElection,
		Doc:      "a leader election",
		Example:  `scheduler: {kind: election, path: /election/scheduler, payload: Member}`,
		Fields:   []string{"payload", "layout"},
		Defaults: layoutDefaults,
		Settings: func(r *Resource) []string { return append(typeSetting("payload", r.Payload), layoutSettings(r)...) },
	},
	{
		Kind:     KindGroup,
		Doc:      "a group membership",
		Example:  `workers: {kind: group, path: /groups/workers, member: Member}`,
		Fields:   []string{"member", "layout"},
		Defaults: layoutDefaults,
		Settings: func(r *Resource) []string { return append(typeSetting("member", r.Member), layoutSettings(r)...) },
	},
	{
		Kind:     KindConfig,
		Doc:      "a config node (a name service with parameters)",
		Example:  `flags: {kind: config, path: /config/flags, value: Flags}`,
		Fields:   []string{"value"},
		Settings: func(r *Resource) []string { return typeSetting("value", r.Value) },
	},
	{
		Kind:     KindPartitioner,
		Doc:      "a fixed set of partitions shared among group members",
		Example:  `shards: {kind: partitioner, path: /partitioners/shards, partitions: 64, member: Member}`,
		Fields:   []string{"partitions", "names", "member"},
		Required: []string{"partitions"},
		Settings: partitionerSettings,
	},
	{
		Kind:     KindService,
		Doc:      "a discoverable service: its instances' registrations (Curator's service discovery)",
		Example:  `payments: {kind: service, path: /services, instance: Member}`,
		Fields:   []string{"instance", "name"},
		Required: []string{"instance"},
		Settings: func(r *Resource) []string {
			d := typeSetting("instance", r.Instance)
			if r.ServiceName != r.Name {
				d = append(d, "name: "+r.ServiceName)
			}
			return d
		},
	},
	{
		Kind:     KindCounter,
		Doc:      "a shared int64 counter",
		Example:  `requests: {kind: counter, path: /counters/requests}`,
		Fields:   []string{"layout"},
		Defaults: layoutDefaults,
		Settings: layoutSettings,
	},
}

// kindFieldTable holds every kind-specific field, in documentation order,
// with its decoder. The decoder runs only for the kinds whose row lists the
// field.
var kindFieldTable = []struct {
	name   string
	decode func(p *parser, r *Resource, n *yaml.Node, field string)
}{
	{"revocable", (*parser).revocable},
	{"layout", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Layout, _ = enum(p, n, field, Layouts) }},
	{"leases", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Leases, _ = p.count(n, field) }},
	{"ttl", (*parser).ttl},
	{"item", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Item = p.valueRef(n, field) }},
	{"delivery", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.Delivery, _ = enum(p, n, field, Deliveries)
	}},
	{"dead_letter_after", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.DeadLetterAfter, _ = p.count(n, field)
		r.DeadLetterAfterPos = posOf(n)
	}},
	{"prefetch", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.Prefetch, _ = p.count(n, field)
		r.PrefetchPos = posOf(n)
		if r.Prefetch > MaxPrefetch {
			p.errorf(n, field, "must be <= %d (items a consumer takes in one multi)", MaxPrefetch)
		}
	}},
	{"priorities", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.Priorities = p.names(r, n, field, "priority", maxPriorities)
	}},
	{"size", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Size, _ = p.count(n, field) }},
	{"participants", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.Participants = p.names(r, n, field, "participant", 0)
	}},
	{"payload", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Payload = p.valueRef(n, field) }},
	{"notify", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Notify, _ = enum(p, n, field, Notifies) }},
	{"partitions", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.Partitions, _ = p.count(n, field)
		if r.Partitions > MaxPartitions {
			p.errorf(n, field, "must be <= %d, got %d: the partitioner's plan and the listing of its owners must fit ZooKeeper's 1 MiB jute.maxbuffer", MaxPartitions, r.Partitions)
			r.Partitions = 0
		}
	}},
	{"names", func(p *parser, r *Resource, n *yaml.Node, field string) {
		r.PartitionNames = p.names(r, n, field, "partition", 0)
	}},
	{"member", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Member = p.valueRef(n, field) }},
	{"value", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Value = p.valueRef(n, field) }},
	{"instance", func(p *parser, r *Resource, n *yaml.Node, field string) { r.Instance = p.valueRef(n, field) }},
	{"name", (*parser).serviceName},
}

// maxPriorities bounds the priorities of a priority queue.
const maxPriorities = 100

// MaxPrefetch bounds a queue's prefetch: the items a consumer takes in one
// multi (runtime's limit of ops a multi).
const MaxPrefetch = 1000

func layoutDefaults(r *Resource) { r.Layout = cmp.Or(r.Layout, LayoutCurator) }

func layoutSettings(r *Resource) []string {
	if r.Layout == LayoutKazoo {
		return []string{"layout: kazoo"}
	}
	return nil
}

func queueDefaults(r *Resource) { r.Delivery = cmp.Or(r.Delivery, AtMostOnce) }

func noSettings(*Resource) []string { return nil }

func lockSettings(r *Resource) []string {
	d := layoutSettings(r)
	switch {
	case r.Revocable && r.ForceAfter > 0:
		d = append(d, "revocable, force after "+r.ForceAfter.String())
	case r.Revocable:
		d = append(d, "revocable")
	}
	return d
}

func queueSettings(r *Resource) []string {
	d := typeSetting("item", r.Item)
	if len(r.Priorities) > 0 {
		d = append(d, "priorities: "+joinNames(r.Priorities, " > "))
	}
	if r.Delivery == AtLeastOnce {
		d = append(d, "at least once")
	}
	if r.DeadLetterAfter > 0 {
		d = append(d, fmt.Sprintf("dead letter after %d", r.DeadLetterAfter))
	}
	if r.Prefetch > 1 {
		d = append(d, fmt.Sprintf("prefetch %d", r.Prefetch))
	}
	return d
}

func partitionerSettings(r *Resource) []string {
	d := []string{fmt.Sprintf("partitions: %d", r.Partitions)}
	if len(r.PartitionNames) > 0 {
		d = append(d, "names: "+joinNames(r.PartitionNames, ", "))
	}
	return append(d, typeSetting("member", r.Member)...)
}

func twoPhaseCommitSettings(r *Resource) []string {
	d := append([]string{"participants: " + joinNames(r.Participants, ", ")}, typeSetting("payload", r.Payload)...)
	if r.Notify == NotifyCoordinator {
		d = append(d, "notify: coordinator")
	}
	return d
}

// typeSetting describes a payload type setting; none when it is not set.
func typeSetting(label string, t *TypeRef) []string {
	if t == nil {
		return nil
	}
	name := t.Name
	if t.Slice {
		name = "[]" + name
	}
	return []string{label + ": " + name}
}

func joinNames(ns []Name, sep string) string {
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	return strings.Join(names, sep)
}

// Kinds lists every kind in the order the documentation presents them.
var Kinds = func() []Kind {
	ks := make([]Kind, len(kindTable))
	for i, row := range kindTable {
		ks[i] = row.Kind
	}
	return ks
}()

// Info returns the row of the kinds table for k; ok is false for a kind
// that is not in the table.
func (k Kind) Info() (info KindInfo, ok bool) {
	for _, row := range kindTable {
		if row.Kind == k {
			return row, true
		}
	}
	return KindInfo{}, false
}

// Settings describes what shapes r beyond its kind and path, one short
// phrase each (the settings zkgen graph draws).
func (r *Resource) Settings() []string {
	if info, ok := r.Kind.Info(); ok {
		return info.Settings(r)
	}
	return nil
}
