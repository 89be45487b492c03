package serve

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/spec"
)

// reservedLabels are label names a path parameter may not take as is: the
// metrics' own, and those Prometheus sets on a scrape.
var reservedLabels = []string{"resource", "priority", "holder", "state", "member", "job", "instance", "le", "quantile"}

// collector turns the model into Prometheus metrics at each scrape: one
// metric family per recipe fact, labelled by resource name and path
// parameters (the union of the spec's parameter names, so that every
// series of a family has the same label names; a resource without one has
// it empty).
type collector struct {
	m      *Model
	params []string // parameter names, in spec order
	labels []string // their label names
	descs  map[string]*prometheus.Desc
}

// family is one metric family: name, help and the labels it adds after
// the resource and parameter labels.
type family struct {
	name, help string
	extra      []string
	counter    bool
}

var families = []family{
	{name: "zkgen_serve_zookeeper_up", help: "1 while zkgen serve has a connected ZooKeeper session and its model is current; 0 during an outage (the other metrics are then the last values read)."},
	{name: "zkgen_serve_instances", help: "Instances of a resource that zkgen serve follows."},
	{name: "zkgen_serve_instances_cut", help: "Instances of a resource past --max-instances, not followed."},
	{name: "zkgen_serve_watches", help: "Watches zkgen serve holds on its session: 1 in persistent mode (its cache's persistent recursive watch on the spec's root); in one-shot mode the one-shot watches it has set (those that fired included for its cache's)."},
	{name: "zkgen_serve_cache_mode", help: "1 for how zkgen serve's cache learns of changes: persistent (one persistent recursive watch, ZooKeeper 3.6+), one-shot (ZooKeeper 3.5) or starting.", extra: []string{"mode"}},
	{name: "zkgen_serve_reads_total", help: "Instance reads zkgen serve has made.", counter: true},
	{name: "zkgen_serve_watch_requests_total", help: "Requests zkgen serve's cache and watches sent: listings, reads of the instance nodes, one-shot watches (the instance reads' own are not counted).", counter: true},
	{name: "zkgen_serve_sessions_total", help: "ZooKeeper sessions zkgen serve has opened.", counter: true},
	{name: "zkgen_serve_read_error", help: "1 for an instance (or a resource's listing) whose state could not be read."},
	{name: "zkgen_lock_holders", help: "Holders of a lock, rwlock or semaphore."},
	{name: "zkgen_lock_waiters", help: "Waiters of a lock, rwlock or semaphore."},
	{name: "zkgen_lock_held_seconds", help: "How long the oldest current holder has held (absent when nobody holds)."},
	{name: "zkgen_semaphore_leases", help: "A semaphore's lease count."},
	{name: "zkgen_lease_holders", help: "Held slots of a TTL lease set."},
	{name: "zkgen_lease_slots", help: "Slots of a TTL lease set."},
	{name: "zkgen_lease_seconds_to_expiry", help: "Seconds until a held TTL lease lapses unless renewed (negative: lapsed, the server has not removed it yet).", extra: []string{"holder"}},
	{name: "zkgen_queue_items", help: "Items in a queue (claimed ones included), per priority for priority queues.", extra: []string{"priority"}},
	{name: "zkgen_queue_claimed", help: "Items of an at-least-once queue claimed and not acknowledged."},
	{name: "zkgen_queue_oldest_item_age_seconds", help: "Age of a queue's oldest item (0 when empty)."},
	{name: "zkgen_queue_dead_letters", help: "Dead letters of an at-least-once queue."},
	{name: "zkgen_queue_next_due_seconds", help: "Seconds until a delay queue's earliest item is due (negative: overdue)."},
	{name: "zkgen_election_leader", help: "1 while an election has an acknowledged leader."},
	{name: "zkgen_election_leader_epoch", help: "The epoch of an election's acknowledged leader."},
	{name: "zkgen_election_candidates", help: "Candidates of an election."},
	{name: "zkgen_group_members", help: "Members of a group."},
	{name: "zkgen_partitions", help: "Partitions of a partitioner."},
	{name: "zkgen_partitions_unowned", help: "Partitions no member owns."},
	{name: "zkgen_partitioner_members", help: "Members of a partitioner."},
	{name: "zkgen_partitions_owned", help: "Partitions a partitioner member owns, by member (its payload in words: an object's fields as key value pairs).", extra: []string{"member"}},
	{name: "zkgen_barrier_up", help: "1 while a barrier is up (holding its waiters)."},
	{name: "zkgen_barrier_waiting", help: "Participants in a double barrier."},
	{name: "zkgen_barrier_size", help: "A double barrier's size."},
	{name: "zkgen_config_version", help: "A config node's data version (-1 when unset)."},
	{name: "zkgen_counter_value", help: "A counter's value."},
	{name: "zkgen_transaction_proposed", help: "1 while a two-phase commit transaction is proposed."},
	{name: "zkgen_service_instances", help: "Registered instances of a service (Curator's too), by its name in the discovery: 0 when none is registered.", extra: []string{"service"}},
	{name: "zkgen_service_instances_enabled", help: "Registered instances of a service that are enabled: those a provider gives (0: callers find none).", extra: []string{"service"}},
	{name: "zkgen_transaction_votes", help: "Participants of a two-phase commit transaction by state (pending, joined, gone, commit, abort).", extra: []string{"state"}},
}

// counters are the families that are counters (the rest are gauges).
var counters = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range families {
		if f.counter {
			m[f.name] = true
		}
	}
	return m
}()

// newCollector returns the model's collector.
func newCollector(m *Model) *collector {
	c := &collector{m: m, descs: map[string]*prometheus.Desc{}}
	for _, r := range m.opt.Spec.Resources {
		for _, p := range r.Params {
			if !slices.Contains(c.params, p.Name) {
				c.params = append(c.params, p.Name)
				c.labels = append(c.labels, labelName(p.Name))
			}
		}
	}
	for _, f := range families {
		var labels []string
		if !isServe(f.name) || f.name == "zkgen_serve_read_error" {
			labels = append([]string{"resource"}, c.labels...)
		} else if f.name == "zkgen_serve_instances" || f.name == "zkgen_serve_instances_cut" {
			labels = []string{"resource"}
		}
		c.descs[f.name] = prometheus.NewDesc(f.name, f.help, append(labels, f.extra...), nil)
	}
	return c
}

func isServe(name string) bool { return strings.HasPrefix(name, "zkgen_serve_") }

// labelName is a parameter's label name: its own unless reserved.
func labelName(p string) string {
	if slices.Contains(reservedLabels, p) || (len(p) > 1 && p[:2] == "__") {
		return "param_" + p
	}
	return p
}

// Describe sends every family's description.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range families {
		ch <- c.descs[f.name]
	}
}

// Collect sends the model's metrics as they are now.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	emit := func(name string, v float64, labels ...string) {
		typ := prometheus.GaugeValue
		if counters[name] {
			typ = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[name], typ, v, labels...)
	}
	emit("zkgen_serve_zookeeper_up", b2f(m.up))
	cs := m.cacheLocked()
	emit("zkgen_serve_watches", float64(cs.Watches))
	emit("zkgen_serve_cache_mode", 1, cs.Mode)
	requests := m.requests0 + cs.requests
	emit("zkgen_serve_reads_total", float64(m.reads))
	emit("zkgen_serve_watch_requests_total", float64(requests))
	emit("zkgen_serve_sessions_total", float64(m.sessions))
	for _, r := range m.opt.Spec.Resources {
		emit("zkgen_serve_instances", float64(len(m.insts[r.Name])), r.Name)
		emit("zkgen_serve_instances_cut", float64(m.cut[r.Name]), r.Name)
		if _, failed := m.listErr[r.Name]; failed {
			emit("zkgen_serve_read_error", 1, c.base(r.Name, nil)...)
		}
		for _, in := range m.insts[r.Name] {
			if !in.ok {
				continue
			}
			base := c.base(r.Name, in.in.Params)
			if in.res.Error != "" {
				emit("zkgen_serve_read_error", 1, base...)
				continue
			}
			c.resource(r, &in.res, base, now, emit)
		}
	}
}

// base is the resource and parameter label values of an instance.
func (c *collector) base(res string, params []inspect.Param) []string {
	out := make([]string, 1+len(c.params))
	out[0] = res
	for _, p := range params {
		out[1+slices.Index(c.params, p.Name)] = p.Value
	}
	return out
}

func with(base []string, extra ...string) []string {
	return append(slices.Clip(base), extra...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// resource emits one instance's facts.
func (c *collector) resource(r *spec.Resource, res *inspect.Resource, base []string, now time.Time, emit func(string, float64, ...string)) {
	age := func(t time.Time) float64 { return now.Sub(t).Seconds() }
	switch {
	case res.Lock != nil:
		l := res.Lock
		emit("zkgen_lock_holders", float64(len(l.Holders)), base...)
		emit("zkgen_lock_waiters", float64(len(l.Waiters)), base...)
		if len(l.Holders) > 0 {
			oldest := l.Holders[0].Created
			for _, h := range l.Holders {
				if h.Created.Before(oldest) {
					oldest = h.Created
				}
			}
			emit("zkgen_lock_held_seconds", age(oldest), base...)
		}
		if r.Kind == spec.KindSemaphore {
			emit("zkgen_semaphore_leases", float64(l.Leases), base...)
		}
	case res.Lease != nil:
		emit("zkgen_lease_holders", float64(len(res.Lease.Holders)), base...)
		emit("zkgen_lease_slots", float64(res.Lease.Leases), base...)
		for _, h := range res.Lease.Holders {
			emit("zkgen_lease_seconds_to_expiry", h.Expires.Sub(now).Seconds(), with(base, h.Holder)...)
		}
	case res.Queue != nil:
		c.queue(r, res.Queue, base, now, emit)
	case res.Service != nil:
		emit("zkgen_service_instances", float64(len(res.Service.Instances)), with(base, r.ServiceName)...)
		emit("zkgen_service_instances_enabled", float64(res.Service.Enabled()), with(base, r.ServiceName)...)
	default:
		c.others(res, base, emit)
	}
}

func (c *collector) queue(r *spec.Resource, q *inspect.QueueState, base []string, now time.Time, emit func(string, float64, ...string)) {
	if len(q.Priorities) > 0 {
		for _, p := range q.Priorities {
			emit("zkgen_queue_items", float64(p.Depth), with(base, p.Name)...)
		}
	} else {
		emit("zkgen_queue_items", float64(q.Depth), with(base, "")...)
	}
	oldest := 0.0
	if q.Oldest != nil {
		oldest = now.Sub(*q.Oldest).Seconds() // at the scrape, not at the last read
	}
	emit("zkgen_queue_oldest_item_age_seconds", oldest, base...)
	if r.Delivery == spec.AtLeastOnce {
		emit("zkgen_queue_claimed", float64(q.Claimed), base...)
		emit("zkgen_queue_dead_letters", float64(len(q.DeadLetters)), base...)
	}
	if q.NextDue != nil {
		emit("zkgen_queue_next_due_seconds", q.NextDue.Sub(now).Seconds(), base...)
	}
}

func (c *collector) others(res *inspect.Resource, base []string, emit func(string, float64, ...string)) {
	switch {
	case res.Election != nil:
		e := res.Election
		emit("zkgen_election_leader", b2f(e.Elected), base...)
		if e.Elected {
			emit("zkgen_election_leader_epoch", float64(e.Epoch), base...)
		}
		emit("zkgen_election_candidates", float64(len(e.Candidates)), base...)
	case res.Group != nil:
		emit("zkgen_group_members", float64(len(res.Group.Members)), base...)
	case res.Partitioner != nil:
		p := res.Partitioner
		emit("zkgen_partitions", float64(p.Partitions), base...)
		emit("zkgen_partitions_unowned", float64(len(p.Unowned)), base...)
		emit("zkgen_partitioner_members", float64(len(p.Members)), base...)
		for _, o := range p.Members {
			emit("zkgen_partitions_owned", float64(len(o.Owns)), with(base, o.Member.Words())...)
		}
	case res.Barrier != nil:
		emit("zkgen_barrier_up", b2f(res.Barrier.Up), base...)
	case res.DoubleBarrier != nil:
		emit("zkgen_barrier_waiting", float64(len(res.DoubleBarrier.Participants)), base...)
		emit("zkgen_barrier_size", float64(res.DoubleBarrier.Size), base...)
	case res.Config != nil:
		emit("zkgen_config_version", float64(res.Config.Version), base...)
	case res.Counter != nil:
		emit("zkgen_counter_value", float64(res.Counter.Value), base...)
	case res.Transaction != nil:
		t := res.Transaction
		emit("zkgen_transaction_proposed", b2f(t.Proposed), base...)
		counts := map[string]int{}
		for _, v := range t.Votes {
			counts[v.State]++
		}
		for _, s := range []string{"pending", "joined", "gone", "commit", "abort"} {
			emit("zkgen_transaction_votes", float64(counts[s]), with(base, s)...)
		}
	}
}
