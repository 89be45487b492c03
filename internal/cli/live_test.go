package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/templates"
)

var liveSeq atomic.Int64

// liveSpec is the example topology plus a counter, under a root of its own.
func liveSpec(t *testing.T) (root, src string) {
	root = fmt.Sprintf("/zkgen-cli-%d-%d", os.Getpid(), liveSeq.Add(1))
	src = `version: 1
package: coord
root: ` + root + `
types:
  Job:    {fields: {name: string, attempt: int}}
  Member: {fields: {host: string, port: int}}
  Flags:  {fields: {dark_mode: bool, max_batch: int}}
resources:
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}
  table_lock: {kind: rwlock, path: "/locks/tables/{table:string}"}
  slots:      {kind: semaphore, path: /semaphores/slots, leases: 3}
  jobs:       {kind: queue, path: /queues/jobs, item: Job}
  tasks:      {kind: priority_queue, path: /queues/tasks, item: Job, priorities: [urgent, normal, bulk]}
  reminders:  {kind: delay_queue, path: /queues/reminders, item: Job}
  start:      {kind: barrier, path: "/barriers/start/{run:string}"}
  epoch:      {kind: double_barrier, path: "/barriers/epoch/{n:int}", size: 3}
  deploy:     {kind: two_phase_commit, path: "/tx/deploy/{id:string}", participants: [database, cache, search]}
  scheduler:  {kind: election, path: /election/scheduler, payload: Member}
  workers:    {kind: group, path: /groups/workers, member: Member}
  flags:      {kind: config, path: /config/flags, value: Flags}
  hits:       {kind: counter, path: /counters/hits}
`
	return root, src
}

func liveConnect(t *testing.T, srv *zktest.Server) *runtime.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// awaitChildren blocks until dir has n children, with child watches.
func awaitChildren(t *testing.T, ctx context.Context, s *runtime.Session, dir string, n int) {
	t.Helper()
	for {
		kids, _, ch, err := s.Conn().ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			if ok, _, ch, err = s.Conn().ExistsW(dir); err == nil && ok {
				continue
			}
		}
		if err != nil {
			t.Fatalf("children %s: %v", dir, err)
		}
		if len(kids) == n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %d children of %s: %v", n, dir, ctx.Err())
		}
	}
}

// liveNextDue is the due time of the first item of the delay queue the live
// commands inspect (the second is due 59 minutes later).
var liveNextDue = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// contended sets up a contended run of the spec's resources and returns the
// lock holder's handle.
func contended(t *testing.T, ctx context.Context, srv *zktest.Server, root string) *runtime.Lock {
	a, b, c := liveConnect(t, srv), liveConnect(t, srv), liveConnect(t, srv)
	bg, cancel := context.WithCancel(ctx)
	done := make(chan error, 8)
	running := 0
	t.Cleanup(func() {
		cancel()
		for range running {
			<-done
		}
	})
	spawn := func(f func() error) { running++; go func() { done <- f() }() }

	// A lock held by a, then b and c waiting, in that order.
	lockDir := root + "/locks/orders/7"
	holder := runtime.NewLock(a, runtime.At(lockDir))
	holder.SetPurpose("reindex")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*runtime.Session{b, c} {
		l := runtime.NewLock(s, runtime.At(lockDir))
		l.SetPurpose(fmt.Sprintf("waiter-%d", i+1))
		spawn(func() error { return l.Lock(bg) })
		awaitChildren(t, ctx, a, lockDir, i+2)
	}
	// A non-integer child beside the int parameter's instances is not one.
	if _, err := a.CreatePersistent(ctx, root+"/locks/orders/not-a-shard"); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewSemaphore(a, runtime.At(root+"/semaphores/slots"), 3).Acquire(ctx); err != nil {
		t.Fatal(err)
	}

	jobs := runtime.NewQueue(a, runtime.At(root+"/queues/jobs"), runtime.StringCodec())
	if _, err := jobs.PutAll(ctx, []string{`{"name":"a"}`, `{"name":"b"}`, `{"name":"c"}`}); err != nil {
		t.Fatal(err)
	}
	tasks := runtime.NewPriorityQueue(a, runtime.At(root+"/queues/tasks"), runtime.StringCodec(), 3)
	for _, p := range []runtime.Priority{2, 0, 2} {
		if err := tasks.Put(ctx, p, `{"name":"t"}`); err != nil {
			t.Fatal(err)
		}
	}

	reminders := runtime.NewDelayQueue(a, runtime.At(root+"/queues/reminders"), runtime.StringCodec())
	for _, in := range []time.Duration{time.Hour, time.Minute} {
		if err := reminders.Put(ctx, `{"name":"r"}`, liveNextDue.Add(in-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}

	if err := runtime.NewBarrier(a, runtime.At(root+"/barriers/start/run-1")).Raise(ctx); err != nil {
		t.Fatal(err)
	}
	spawn(func() error { return runtime.NewDoubleBarrier(b, runtime.At(root+"/barriers/epoch/4"), 3).Enter(bg) })
	awaitChildren(t, ctx, a, root+"/barriers/epoch/4", 1)

	el := func(s *runtime.Session) *runtime.Election[string] {
		return runtime.NewElection(s, runtime.At(root+"/election/scheduler"), runtime.StringCodec())
	}
	if _, err := el(a).Campaign(ctx, `{"host":"alpha","port":1}`); err != nil {
		t.Fatal(err)
	}
	spawn(func() error { _, err := el(b).Campaign(bg, `{"host":"beta","port":2}`); return err })
	awaitChildren(t, ctx, a, root+"/election/scheduler", 4) // two candidates, leader, epoch

	for i, s := range []*runtime.Session{b, c} {
		g := runtime.NewGroup(s, runtime.At(root+"/groups/workers"), runtime.StringCodec())
		if _, err := g.Join(ctx, fmt.Sprintf(`{"host":"w%d","port":%d}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runtime.NewConfig(a, runtime.At(root+"/config/flags"), runtime.StringCodec()).Set(ctx, `{"dark_mode":true,"max_batch":10}`); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewCounter(a, runtime.At(root+"/counters/hits")).Add(ctx, 5); err != nil {
		t.Fatal(err)
	}
	tx := runtime.NewTwoPhaseCommit(a, runtime.At(root+"/tx/deploy/tx-1"), runtime.BytesCodec(), []runtime.Participant{"database", "cache", "search"})
	if err := tx.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Vote(ctx, "database", runtime.Commit); err != nil {
		t.Fatal(err)
	}
	if err := runtime.NewTwoPhaseCommit(c, runtime.At(root+"/tx/deploy/tx-1"), runtime.BytesCodec(), []runtime.Participant{"database", "cache", "search"}).Join(ctx, "cache"); err != nil {
		t.Fatal(err)
	}
	return holder
}

// liveSetup starts ZooKeeper, writes liveSpec as zkgen.yaml in a new
// working directory and contends for its lock (contended): the start of
// a test of the live commands. ctx ends with the test.
func liveSetup(t *testing.T) (srv *zktest.Server, ctx context.Context, root, src string, holder *runtime.Lock) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv = zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	chdirTemp(t)
	root, src = liveSpec(t)
	writeFile(t, "zkgen.yaml", src)
	return srv, ctx, root, src, contended(t, ctx, srv, root)
}

func TestLiveCommands(t *testing.T) {
	srv, ctx, root, src, holder := liveSetup(t)
	servers := "--servers=" + strings.Join(srv.Servers(), ",")

	t.Run("json", func(t *testing.T) {
		r := zkgen(t, "inspect", servers, "--json")
		r.want(t, ExitOK, nil, empty)
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields() // the document is exactly the documented structure
		var snap inspect.Snapshot
		if err := dec.Decode(&snap); err != nil {
			t.Fatalf("--json does not parse: %v\n%s", err, r.stdout)
		}
		byPath := map[string]inspect.Resource{}
		var paths []string
		for _, res := range snap.Resources {
			if res.Error != "" {
				t.Errorf("%s: %s", res.Path, res.Error)
			}
			byPath[strings.TrimPrefix(res.Path, root)] = res
			paths = append(paths, strings.TrimPrefix(res.Path, root))
		}
		wantPaths := []string{"/locks/orders/7", "/locks/tables/{table:string}", "/semaphores/slots", "/queues/jobs", "/queues/tasks", "/queues/reminders", "/barriers/start/run-1",
			"/barriers/epoch/4", "/tx/deploy/tx-1", "/election/scheduler", "/groups/workers", "/config/flags", "/counters/hits"}
		if !slices.Equal(paths, wantPaths) {
			t.Fatalf("instances %v, want %v", paths, wantPaths)
		}
		// A parameterised resource without a live instance is listed, not hidden.
		if tl := byPath["/locks/tables/{table:string}"]; !tl.NoInstances || tl.Name != "table_lock" || tl.Lock != nil {
			t.Errorf("table_lock %+v", tl)
		}
		if byPath["/locks/orders/7"].NoInstances {
			t.Errorf("order_lock has an instance")
		}
		l := byPath["/locks/orders/7"].Lock
		if len(l.Holders) != 1 || l.Holders[0].Purpose != "reindex" || l.Holders[0].PID != os.Getpid() || l.Holders[0].Host == "" {
			t.Errorf("holder %+v", l.Holders)
		}
		if len(l.Waiters) != 2 || l.Waiters[0].Purpose != "waiter-1" || l.Waiters[1].Purpose != "waiter-2" {
			t.Errorf("waiters %+v", l.Waiters)
		}
		if s := byPath["/semaphores/slots"].Lock; s.Leases != 3 || len(s.Holders) != 1 || len(s.Waiters) != 0 {
			t.Errorf("semaphore %+v", s)
		}
		if q := byPath["/queues/jobs"].Queue; q.Depth != 3 || q.Oldest == nil || q.Priorities != nil {
			t.Errorf("jobs %+v", q)
		}
		wantPrio := []inspect.PriorityDepth{{Name: "urgent", Depth: 1}, {Name: "normal", Depth: 0}, {Name: "bulk", Depth: 2}}
		if q := byPath["/queues/tasks"].Queue; q.Depth != 3 || !slices.Equal(q.Priorities, wantPrio) {
			t.Errorf("tasks %+v", q)
		}
		if q := byPath["/queues/reminders"].Queue; q.Depth != 2 || q.NextDue == nil || !q.NextDue.Equal(liveNextDue) {
			t.Errorf("reminders %+v, want 2 items, the next due at %v", q, liveNextDue)
		}
		if b := byPath["/barriers/start/run-1"].Barrier; !b.Up {
			t.Errorf("barrier %+v", b)
		}
		if d := byPath["/barriers/epoch/4"].DoubleBarrier; d.Size != 3 || d.Ready || len(d.Participants) != 1 {
			t.Errorf("double barrier %+v", d)
		}
		e := byPath["/election/scheduler"].Election
		if !e.Elected || e.Epoch < 1 || compactJSON(t, e.Payload.JSON) != `{"host":"alpha","port":1}` || len(e.Candidates) != 2 ||
			compactJSON(t, e.Candidates[1].Payload.JSON) != `{"host":"beta","port":2}` || !strings.HasSuffix(e.Candidates[0].Node, "/"+e.Leader) {
			t.Errorf("election %+v", e)
		}
		if g := byPath["/groups/workers"].Group; len(g.Members) != 2 || compactJSON(t, g.Members[0].JSON) != `{"host":"w0","port":0}` {
			t.Errorf("group %+v", g)
		}
		if c := byPath["/config/flags"].Config; !c.Exists || c.Version != 0 || compactJSON(t, c.Value.JSON) != `{"dark_mode":true,"max_batch":10}` {
			t.Errorf("config %+v", c)
		}
		if c := byPath["/counters/hits"].Counter; c.Value != 5 {
			t.Errorf("counter %+v", c)
		}
		wantVotes := []inspect.Vote{{Participant: "database", State: "commit"}, {Participant: "cache", State: "joined"}, {Participant: "search", State: "pending"}}
		if tx := byPath["/tx/deploy/tx-1"].Transaction; !tx.Proposed || tx.Decision != "" || !slices.Equal(tx.Votes, wantVotes) {
			t.Errorf("transaction %+v", tx)
		}
	})

	t.Run("table", func(t *testing.T) {
		r := zkgen(t, "inspect", servers)
		r.want(t, ExitOK, nil, empty)
		for _, want := range []string{
			"order_lock  lock", "held, 2 waiting", `"reindex"`, "waiter 1", `"waiter-1"`, "waiter 2", `"waiter-2"`,
			"1/3 leases held", "3 items, oldest", "3 items (urgent 1, normal 0, bulk 2)", "up", "1/3 entered",
			`leader epoch 1: {"host":"alpha","port":1}, 2 candidates`, "2 members", `version 0: {"dark_mode":true,"max_batch":10}`,
			"voting", "database", "commit", "joined", "pending",
			"table_lock  rwlock            " + root + "/locks/tables/{table:string}  no instances",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("table lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "not-a-shard") {
			t.Errorf("a non-integer child was taken for an int parameter:\n%s", r.stdout)
		}
		t.Logf("\n%s", r.stdout)
	})

	t.Run("resource", func(t *testing.T) {
		r := zkgen(t, "inspect", servers, "--json", "--resource", "jobs", "--resource=order_lock")
		r.want(t, ExitOK, nil, empty)
		var snap inspect.Snapshot
		if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, res := range snap.Resources {
			names = append(names, res.Name)
		}
		if !slices.Equal(names, []string{"order_lock", "jobs"}) { // spec order
			t.Errorf("resources %v, want order_lock, jobs", names)
		}
		r = zkgen(t, "inspect", servers, "--resource", "job")
		r.want(t, ExitFailure, empty, nil)
		if !strings.HasPrefix(r.stderr, `zkgen: --resource: no resource "job" in zkgen.yaml; it declares: order_lock, table_lock, slots,`) {
			t.Errorf("stderr %q", r.stderr)
		}
	})

	t.Run("root missing", func(t *testing.T) {
		// The same spec under a root that was never created: the wrong
		// cluster, or nothing ran there. Not an idle system.
		missing := root + "-never"
		writeFile(t, "missing.yaml", strings.Replace(src, "root: "+root, "root: "+missing, 1))
		want := "zkgen: the spec's root " + missing + " does not exist on " + strings.Join(srv.Servers(), ",") +
			": wrong servers, or nothing of this spec has run there yet ('zkgen provision' creates it)\n"
		for _, args := range [][]string{{"inspect"}, {"inspect", "--json"}, {"reap", "--older-than=1m"}} {
			zkgen(t, append(args, servers, "-f", "missing.yaml")...).want(t, ExitFailure, empty, str(want))
		}
	})

	t.Run("watch", func(t *testing.T) {
		// Into a file or a pipe: frames one after the other, no escape codes.
		w := &writes{ch: make(chan string, 16)}
		out := watchUntil(t, servers, w, w.ch, func(all string) bool { return strings.Count(all, "held, 2 waiting") >= 2 })
		if strings.Contains(out, "\x1b") {
			t.Errorf("escape codes written to a non-terminal:\n%q", out)
		}
		if n := strings.Count(out, "\nNAME "); n < 2 || !strings.HasPrefix(out, "zkgen inspect ") {
			t.Errorf("want frames one after the other, each with its header:\n%s", out)
		}
	})

	t.Run("watch terminal", func(t *testing.T) {
		// On a terminal: redrawn in place.
		ptm, tty := openPTY(t)
		chunks := make(chan string, 16)
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := ptm.Read(buf)
				if err != nil {
					close(chunks)
					return
				}
				chunks <- string(buf[:n])
			}
		}()
		out := watchUntil(t, servers, tty, chunks, func(all string) bool {
			return strings.Count(all, clearScreen) >= 2 && strings.Count(all, "held, 2 waiting") >= 2
		})
		if !strings.HasPrefix(out, clearScreen) {
			t.Errorf("first frame does not clear the screen:\n%q", out)
		}
		tty.Close()
		ptm.Close()
		for range chunks { // the reader ends
		}
	})

	t.Run("reap", func(t *testing.T) {
		lockDir := root + "/locks/orders/7"
		leases := root + "/semaphores/slots/leases"
		s := liveConnect(t, srv)
		before := func(dir string) []string {
			kids, err := s.Children(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(kids)
			return kids
		}
		locks, lease := before(lockDir), before(leases)
		if len(locks) != 3 || len(lease) != 1 {
			t.Fatalf("lock nodes %v, leases %v", locks, lease)
		}
		// Young nodes survive a large --older-than, even with --yes.
		r := zkgen(t, "reap", servers, "--older-than", "1h", "--yes")
		r.want(t, ExitOK, str("no lock node older than 1h0m0s\n"), empty)
		// A dry run lists every node older than a negative age, and removes none.
		r = zkgen(t, "reap", servers, "--older-than=-1m")
		r.want(t, ExitOK, nil, empty)
		if n := strings.Count(r.stdout, "would remove "); n != 4 || !strings.Contains(r.stdout, "4 node(s) older than -1m0s; run again with --yes") {
			t.Errorf("dry run:\n%s", r.stdout)
		}
		// --resource and --path narrow it.
		r = zkgen(t, "reap", servers, "--older-than=-1m", "--resource", "slots")
		r.want(t, ExitOK, nil, empty)
		if n := strings.Count(r.stdout, "would remove "+leases+"/"); n != 1 || strings.Count(r.stdout, "would remove ") != 1 {
			t.Errorf("--resource slots:\n%s", r.stdout)
		}
		r = zkgen(t, "reap", servers, "--older-than=-1m", "--path", lockDir)
		r.want(t, ExitOK, nil, empty)
		if n := strings.Count(r.stdout, "would remove "+lockDir+"/"); n != 3 || strings.Count(r.stdout, "would remove ") != 3 {
			t.Errorf("--path %s:\n%s", lockDir, r.stdout)
		}
		r = zkgen(t, "reap", servers, "--older-than=-1m", "--path", lockDir+"/"+locks[0])
		r.want(t, ExitOK, nil, empty)
		if strings.Count(r.stdout, "would remove "+lockDir+"/"+locks[0]+" ") != 1 || strings.Count(r.stdout, "would remove ") != 1 {
			t.Errorf("--path one node:\n%s", r.stdout)
		}
		zkgen(t, "reap", servers, "--older-than=-1m", "--path", root+"/locks/orders/70").
			want(t, ExitOK, str("no lock node older than -1m0s\n"), empty)
		zkgen(t, "reap", servers, "--older-than=1m", "--resource", "jobs").
			want(t, ExitFailure, empty, str("zkgen: --resource jobs: a queue; reap breaks only lock, rwlock and semaphore nodes\n"))
		zkgen(t, "reap", servers, "--older-than=1m", "--path", "locks").
			want(t, ExitFailure, empty, str(`zkgen: --path "locks": want an absolute znode path, like `+root+"/locks\n"))
		if !slices.Equal(before(lockDir), locks) || !slices.Equal(before(leases), lease) {
			t.Fatal("a dry run removed nodes")
		}
		lost := holder.Lost()
		r = zkgen(t, "reap", servers, "--older-than=-1m", "--yes")
		r.want(t, ExitOK, nil, empty)
		for _, n := range append(locks, lease...) {
			if !strings.Contains(r.stdout, "removed "+root) || !strings.Contains(r.stdout, n) {
				t.Errorf("output does not name %s:\n%s", n, r.stdout)
			}
		}
		<-lost // the holder learns its lock was broken
		// None of the reaped nodes is left (waiters may have queued again with new nodes).
		for _, k := range before(lockDir) {
			if slices.Contains(locks, k) {
				t.Errorf("%s survived reaping", k)
			}
		}
		if slices.ContainsFunc(before(leases), func(k string) bool { return slices.Contains(lease, k) }) {
			t.Errorf("lease survived reaping")
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		for _, cmd := range []string{"inspect", "provision"} {
			r := zkgen(t, cmd, "--servers", addr, "--timeout", "500ms")
			r.want(t, ExitFailure, empty, str("zkgen: cannot reach ZooKeeper at "+addr+" within 500ms (set --servers or ZK_SERVERS)\n"))
		}
	})
}

func TestProvision(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chdirTemp(t)
	root, src := liveSpec(t)
	writeFile(t, "zkgen.yaml", src)
	servers := "--servers=" + strings.Join(srv.Servers(), ",")
	s := liveConnect(t, srv)

	want := []string{root, root + "/locks", root + "/locks/orders", root + "/locks/tables", root + "/semaphores",
		root + "/semaphores/slots", root + "/queues", root + "/queues/jobs", root + "/queues/tasks", root + "/queues/reminders", root + "/barriers",
		root + "/barriers/start", root + "/barriers/epoch", root + "/tx", root + "/tx/deploy", root + "/election",
		root + "/election/scheduler", root + "/groups", root + "/groups/workers", root + "/config", root + "/counters"}
	var dry, wet bytes.Buffer
	for _, p := range want {
		fmt.Fprintf(&dry, "would create %s\n", p)
		fmt.Fprintf(&wet, "created %s\n", p)
	}
	zkgen(t, "provision", servers, "--dry-run").want(t, ExitOK, str(dry.String()), empty)
	if ok, err := s.Exists(ctx, root); ok || err != nil {
		t.Fatalf("a dry run created the root: %v %v", ok, err)
	}
	zkgen(t, "provision", servers, "--strict").want(t, ExitOK, str(wet.String()), empty) // nothing unknown
	for _, p := range want {
		if ok, err := s.Exists(ctx, p); !ok || err != nil {
			t.Errorf("%s not created: %v", p, err)
		}
	}
	// Nodes the spec explains, and nodes it does not.
	for _, p := range []string{"/locks/orders/7/x", "/config/flags", "/stray/deep", "/locks/orders/abc", "/locks/other", "/tx/deploy/t1/database"} {
		if _, err := s.CreatePersistent(ctx, root+p); err != nil {
			t.Fatal(err)
		}
	}
	again := fmt.Sprintf("all %d parent nodes exist\nunknown %s/locks/orders/abc\nunknown %s/locks/other\nunknown %s/stray\n", len(want), root, root, root)
	zkgen(t, "provision", servers).want(t, ExitOK, str(again), empty)
	zkgen(t, "provision", servers, "--dry-run").want(t, ExitOK, str(again), empty)
	// --strict lists them just the same, and fails.
	strictErr := "zkgen: 3 node(s) under " + root + " that the spec does not declare (--strict)\n"
	zkgen(t, "provision", servers, "--strict").want(t, ExitFailure, str(again), str(strictErr))
	zkgen(t, "provision", servers, "--strict", "--dry-run").want(t, ExitFailure, str(again), str(strictErr))
}

// compactJSON is raw without insignificant space (--json indents payloads
// with the document).
func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("payload %q: %v", raw, err)
	}
	return b.String()
}

// writes is a writer that hands every write to ch.
// watchUntil runs inspect --watch=10ms writing to out, whose output arrives
// on chunks, until done accepts everything read so far; then it interrupts
// inspect, requires exit status 0, and returns what was read. chunks is
// drained until inspect has returned, so that it never blocks writing.
func watchUntil(t *testing.T, servers string, out io.Writer, chunks <-chan string, done func(all string) bool) string {
	t.Helper()
	return watchArgsUntil(t, []string{"inspect", servers, "--watch=10ms"}, out, io.Discard, chunks, done)
}

// watchArgsUntil is watchUntil with the command line args, and errOut as
// the standard error.
func watchArgsUntil(t *testing.T, args []string, out, errOut io.Writer, chunks <-chan string, done func(all string) bool) string {
	t.Helper()
	code := make(chan int, 1)
	go func() { code <- run(args, out, errOut, templates.Generate) }()
	var all strings.Builder
	for !done(all.String()) {
		select {
		case c, ok := <-chunks:
			if !ok {
				t.Fatalf("output ended early:\n%q", all.String())
			}
			all.WriteString(c)
		case c := <-code:
			t.Fatalf("inspect --watch exited (status %d) before the test was done:\n%s", c, all.String())
		}
	}
	// Interrupted, --watch stops with success.
	interruptSelf(t)
	for {
		select {
		case c := <-code:
			if c != ExitOK {
				t.Fatalf("exit %d", c)
			}
			return all.String()
		case _, ok := <-chunks:
			if !ok {
				chunks = nil
			}
		}
	}
}

// interruptSelf sends SIGINT to the test process: a command under test
// holds it with signal.NotifyContext while it runs, so the process lives on.
func interruptSelf(t *testing.T) {
	t.Helper()
	self, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = self.Signal(os.Interrupt)
	}
	if err != nil {
		t.Fatalf("interrupt: %v", err)
	}
}

type writes struct{ ch chan string }

func (w *writes) Write(p []byte) (int, error) {
	w.ch <- string(p)
	return len(p), nil
}

// provision creates the parents with the declared ACLs: creator_all gives
// the credentials of --auth every permission and nobody else any.
func TestProvisionACL(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	chdirTemp(t)
	root := fmt.Sprintf("/acl-%d", time.Now().UnixNano())
	writeFile(t, "zkgen.yaml", "version: 1\npackage: p\nroot: "+root+"\nacl: creator_all\nresources:\n"+
		"  l: {kind: lock, path: /locks/l}\n"+
		"  open: {kind: lock, path: /open/l, acl: world_all}\n")
	zkgen(t, "provision", "--servers="+srv.Addr(), "--auth", "ops:secret").want(t, ExitOK, nil, empty)

	s := liveConnect(t, srv)
	ops := liveConnect(t, srv)
	if err := ops.Conn().AddAuth("digest", []byte("ops:secret")); err != nil {
		t.Fatal(err)
	}
	acl, _, err := ops.Conn().GetACL(root + "/locks")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "ops:") || acl[0].Perms != zk.PermAll {
		t.Fatalf("ACL of a creator_all node: %+v, %v", acl, err)
	}
	if _, err := s.Conn().Create(root+"/locks/x", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("an anonymous client created under a creator_all node: %v", err)
	}
	if _, err := ops.Conn().Create(root+"/locks/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("the credentials of --auth cannot create under the node: %v", err)
	}
	acl, _, err = s.Conn().GetACL(root + "/open/l")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "world" || acl[0].Perms != zk.PermAll {
		t.Fatalf("ACL of a world_all node: %+v, %v", acl, err)
	}
}

// zkgen inspect shows a lease's holders (a server with TTL nodes).
func TestLiveLease(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t, zktest.WithTTLNodes(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chdirTemp(t)
	root := fmt.Sprintf("/zkgen-cli-%d-%d", os.Getpid(), liveSeq.Add(1))
	writeFile(t, "zkgen.yaml", "version: 1\npackage: coord\nroot: "+root+"\nresources:\n"+
		"  leases: {kind: lease, path: /leases/workers, ttl: 30s, leases: 2}\n")
	servers := "--servers=" + strings.Join(srv.Servers(), ",")
	s := liveConnect(t, srv)
	le, err := runtime.NewTTLLeases(s, runtime.At(root+"/leases/workers"), 2, 30*time.Second).Acquire(ctx, "worker-a")
	if err != nil {
		t.Fatal(err)
	}
	snap := inspectJSON(t, servers)
	if len(snap.Resources) != 1 || snap.Resources[0].Lease == nil {
		t.Fatalf("resources %+v", snap.Resources)
	}
	l := snap.Resources[0].Lease
	if l.Leases != 2 || l.TTLSeconds != 30 || len(l.Holders) != 1 || l.Holders[0].Holder != "worker-a" ||
		l.Holders[0].Node != le.Node() || l.Holders[0].PID != os.Getpid() || !l.Holders[0].Expires.Equal(l.Holders[0].Renewed.Add(30*time.Second)) {
		t.Errorf("lease section %+v", l)
	}
	text := zkgen(t, "inspect", servers)
	if !strings.Contains(text.stdout, "1/2 held, ttl 30s") || !strings.Contains(text.stdout, "worker-a") ||
		!strings.Contains(text.stdout, ", expires in ") || !strings.Contains(text.stdout, l.Holders[0].Expires.Local().Format(time.TimeOnly)) {
		t.Errorf("inspect text (want the holder, when it expires):\n%s", text.stdout)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A semaphore whose internal lock a paused process holds: no lease is
// held, everyone waits, and inspect says who blocks them (the holder of
// the semaphore's lock, for how long), in the table and in --json.
func TestLiveSemaphoreBlocked(t *testing.T) {
	srv, ctx, root, _, _ := liveSetup(t)
	servers := "--servers=" + strings.Join(srv.Servers(), ",")
	dir := root + "/semaphores/slots"
	// The paused process: it took the semaphore's lock (<dir>/locks, as
	// runtime.NewSemaphore lays it out) and stopped there.
	paused := runtime.NewLock(liveConnect(t, srv), runtime.At(dir+"/locks"))
	paused.SetPurpose("paused")
	if err := paused.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithCancel(ctx)
	defer cancel()
	s := liveConnect(t, srv)
	for range 2 { // they wait for the semaphore's lock
		go runtime.NewSemaphore(liveConnect(t, srv), runtime.At(dir), 3).Acquire(bg)
	}
	awaitChildren(t, ctx, s, dir+"/locks", 3)
	snap := inspectJSON(t, servers, "--resource", "slots")
	g := snap.Resources[0].Lock.Gate
	if g == nil || g.Purpose != "paused" || g.PID != os.Getpid() {
		t.Fatalf("gate %+v, want the paused holder of %s/locks", g, dir)
	}
	text := zkgen(t, "inspect", servers, "--resource", "slots")
	if !strings.Contains(text.stdout, "holds the semaphore's lock") || !strings.Contains(text.stdout, `"paused"`) {
		t.Errorf("inspect text does not say who blocks the waiters:\n%s", text.stdout)
	}
	t.Logf("inspect:\n%s", text.stdout)
}
