package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Once serve is current, each single change to one resource — the
// smallest a client can make — shows in /api/state: the kinds' watches
// cover every node their state is read from. Each step waits for its
// change before the next is made, so no change rides on another's event.
// It holds in both of the cache's modes: persistent (ZooKeeper 3.6+), and
// one-shot, through a proxy that answers addWatch as ZooKeeper 3.5 does.
func TestServeFollowsEachChange(t *testing.T) {
	for _, mode := range []string{"persistent", "one-shot"} {
		t.Run(mode, func(t *testing.T) { followEachChange(t, mode) })
	}
}

func followEachChange(t *testing.T, mode string) {
	// The server's container sweep, which removes empty directories (and
	// so changes their parents' children), is kept out of the test's way:
	// no change may ride on it.
	srv := zktest.Start(t, zktest.WithTTLNodes(10*time.Minute))
	provision(t, srv.Addr())
	addr := srv.Addr()
	if mode == "one-shot" {
		p := zktest.NewProxy(t, srv.Addr())
		p.Refuse(zktest.OpAddWatch, true)
		addr = p.Addr()
	}
	base := startServe(t, addr)
	awaitState(t, base, func(s apiState) bool { return s.Up && s.Cache.Mode == mode })
	awaitMetrics(t, base, func(m metrics) bool { return m[`zkgen_serve_cache_mode{mode="`+mode+`"}`] == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, c2 := exampleClient(t, ctx, srv.Servers()), exampleClient(t, ctx, srv.Servers())
	everyKind(ctx, t, c)
	await := func(what, res, path string, want any) {
		t.Helper()
		awaitField(t, base, what, res, path, want)
	}
	await("the partitioner settled", "shards", "partitioner.unowned.#", 0)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	must(c.Outbox().Put(ctx, coord.Job{Name: "o2"}))
	await("a put into an open bucket", "outbox", "queue.depth", 2)
	must(c.Jobs().Put(ctx, coord.Job{Name: "j2"}))
	await("a put into a FIFO queue", "jobs", "queue.depth", 2)
	must(c.Tasks().Put(ctx, coord.TasksUrgent, coord.Job{Name: "u"}))
	await("a put at another priority", "tasks", "queue.priorities.0.depth", 1)
	td, err := c2.Tasks().Take(ctx)
	must(err)
	await("a claim at a priority", "tasks", "queue.claims.#", 1)
	must(td.Release(ctx))
	await("a release at a priority", "tasks", "queue.claims.#", 0)
	must(c.Reminders().Put(ctx, coord.Job{Name: "r2"}, time.Now().Add(time.Hour)))
	await("a put into a delay queue", "reminders", "queue.depth", 2)
	d, err := c2.Outbox().Take(ctx)
	must(err)
	await("a claim", "outbox", "queue.claimed", 1)
	must(d.Ack(ctx))
	await("an ack", "outbox", "queue.depth", 1)

	go c2.OrderLock(1).Lock(ctx)
	await("a lock's waiter", "order_lock", "lock.waiters.#", 1)
	_, err = c2.Slots().Acquire(ctx)
	must(err)
	await("a semaphore lease", "slots", "lock.holders.#", 2)
	l2, err := c2.Leases().Acquire(ctx, "worker-2")
	must(err)
	await("a TTL lease", "leases", "lease.holders.#", 2)
	before := field(t, base, "leases", "lease.holders.1.renewed")
	time.Sleep(5 * time.Millisecond) // the renewal's mtime must differ from the creation's (millisecond clock)
	must(l2.Renew(ctx))
	awaitFunc(t, base, "a TTL lease renewed", "leases", "lease.holders.1.renewed", func(v string) bool { return v != before })
	_, err = c.Flags().Set(ctx, coord.Flags{MaxBatch: 7})
	must(err)
	await("a config value", "flags", "config.version", 1)
	_, err = c.Hits().Add(ctx, 5)
	must(err)
	await("a counter", "hits", "counter.value", 5)
	go c2.Scheduler().Campaign(ctx, coord.Member{Host: "h2", Port: 2})
	await("a second candidate", "scheduler", "election.candidates.#", 2)
	_, err = c2.Workers().Join(ctx, coord.Member{Host: "h2", Port: 2})
	must(err)
	await("a second group member", "workers", "group.members.#", 2)
	_, err = c2.Shards().Join(ctx, coord.Member{Host: "h2", Port: 2})
	must(err)
	await("a second partitioner member", "shards", "partitioner.members.#", 2)
	must(c.Start("run-2").Raise(ctx))
	await("a barrier instance appears", "start", "#", 2)
	must(c.Start("run-1").Lower(ctx))
	await("a barrier instance goes", "start", "#", 1)
	await("the barrier left", "start", "params.0.value", "run-2")
	tx := c.Deploy("d1")
	must(tx.Join(ctx, coord.DeployCache))
	must(tx.Vote(ctx, coord.DeployCache, runtime.Commit))
	await("a vote", "deploy", "transaction.votes.1.state", "commit")
	go c2.Epoch(4).Enter(ctx)
	await("a double barrier participant", "epoch", "double_barrier.participants.#", 1)
}

// field is the value at path of resource res's first instance now.
func field(t *testing.T, base, res, path string) string {
	t.Helper()
	var got string
	awaitFunc(t, base, "read "+path, res, path, func(v string) bool { got = v; return v != "null" })
	return got
}

// awaitField polls /api/state until the value at path (dot-separated keys
// and indexes, "#" for a length) of resource res's first instance — or,
// for path "#", the number of its instances — is want. It fails the test
// after 30 seconds: serve reads a change within --settle of its watch
// firing, so by then the watch that should have fired has not.
func awaitField(t *testing.T, base, what, res, path string, want any) {
	t.Helper()
	wantJSON, _ := json.Marshal(want)
	awaitFunc(t, base, what, res, path, func(v string) bool { return v == string(wantJSON) })
}

// awaitFunc is awaitField for a value (as JSON) that ok accepts.
func awaitFunc(t *testing.T, base, what, res, path string, ok func(string) bool) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/api/state")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var st struct {
			Resources []map[string]any `json:"resources"`
		}
		if json.Unmarshal(body, &st) != nil {
			continue
		}
		var ins []any
		for _, r := range st.Resources {
			if r["name"] == res {
				ins = append(ins, r)
			}
		}
		var v any = ins
		if path != "#" {
			if len(ins) == 0 {
				continue
			}
			v = ins[0]
		}
		v = at(v, path)
		b, _ := json.Marshal(v)
		if got = string(b); ok(got) {
			return
		}
	}
	t.Fatalf("%s: %s %s is still %s", what, res, path, got)
}

// at follows path into v.
func at(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			if k == "#" {
				v = len(x)
				continue
			}
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			if k == "#" {
				return 0
			}
			return nil
		}
	}
	return v
}
