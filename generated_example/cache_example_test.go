package example_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// purposes returns the purposes of the contenders of a lock state, holders
// then waiters.
func purposes(st runtime.LockState) (holders, waiters []string) {
	for _, h := range st.Holders {
		holders = append(holders, h.Owner.Purpose)
	}
	for _, h := range st.Waiters {
		waiters = append(waiters, h.Owner.Purpose)
	}
	return holders, waiters
}

// lockStateIs syncs the cache and fails unless instance k shows exactly
// the holders and waiters given (by purpose).
func lockStateIs[K comparable](t *testing.T, ctx context.Context, cache *runtime.LockCache[K], k K, holders, waiters []string) {
	t.Helper()
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get(k)
	hs, ws := purposes(st)
	if ok != (len(holders)+len(waiters) > 0) || !equal(hs, holders) || !equal(ws, waiters) {
		t.Fatalf("instance %v: ok %v, holders %v, waiters %v; want holders %v, waiters %v", k, ok, hs, ws, holders, waiters)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// awaitEvent reads events until one satisfies ok.
func awaitEvent[K comparable, T any](t *testing.T, ctx context.Context, evs <-chan runtime.CacheEvent[K, T], what string, ok func(runtime.CacheEvent[K, T]) bool) runtime.CacheEvent[K, T] {
	t.Helper()
	for {
		select {
		case ev, open := <-evs:
			if !open {
				t.Fatalf("stream closed before %s", what)
			}
			if ok(ev) {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no %s: %v", what, ctx.Err())
		}
	}
}

// The generated lock cache shows an instance's holder and its waiter, then
// the waiter as holder once the first releases, then nothing: docs/locks.md
// (what the cache mirrors).
func TestGeneratedLockCache(t *testing.T) {
	ctx, cs, _ := clients(t, 3)
	a, b, watcher := cs[0], cs[1], cs[2]
	cache, err := watcher.OrderLockCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := cache.Events(ctx)

	first := a.OrderLock(7)
	first.SetPurpose("a")
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lockStateIs(t, ctx, cache, 7, []string{"a"}, nil)
	awaitEvent(t, ctx, evs, "shard 7 added", func(ev runtime.CacheEvent[int, runtime.LockState]) bool {
		return ev.Kind == runtime.CacheAdded && ev.Key == 7
	})

	second := b.OrderLock(7)
	second.SetPurpose("b")
	locked := make(chan error, 1)
	go func() { locked <- second.Lock(ctx) }()
	awaitEvent(t, ctx, evs, "a waiter on shard 7", func(ev runtime.CacheEvent[int, runtime.LockState]) bool {
		return ev.Key == 7 && len(ev.Value.Waiters) == 1
	})
	lockStateIs(t, ctx, cache, 7, []string{"a"}, []string{"b"})

	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	lockStateIs(t, ctx, cache, 7, []string{"b"}, nil)
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lockStateIs(t, ctx, cache, 7, nil, nil)
	awaitEvent(t, ctx, evs, "shard 7 removed", func(ev runtime.CacheEvent[int, runtime.LockState]) bool {
		return ev.Kind == runtime.CacheRemoved && ev.Key == 7
	})
	if n := cache.Len(); n != 0 {
		t.Fatalf("%d instances held after every release", n)
	}
}

// The read/write lock's cache shows two readers holding and a writer
// waiting behind them, then the writer alone once they release.
func TestGeneratedRWLockCache(t *testing.T) {
	ctx, cs, _ := clients(t, 3)
	a, b, watcher := cs[0], cs[1], cs[2]
	cache, err := watcher.TableLockCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := cache.Events(ctx)
	var readers []runtime.LockHandle
	for _, p := range []string{"r1", "r2"} {
		r := a.TableLock("users").Read()
		r.SetPurpose(p)
		if err := r.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	w := b.TableLock("users").Write()
	w.SetPurpose("w")
	locked := make(chan error, 1)
	go func() { locked <- w.Lock(ctx) }()
	awaitEvent(t, ctx, evs, "a writer waiting", func(ev runtime.CacheEvent[string, runtime.LockState]) bool {
		return ev.Key == "users" && len(ev.Value.Waiters) == 1
	})
	lockStateIs(t, ctx, cache, "users", []string{"r1", "r2"}, []string{"w"})
	st, _ := cache.Get("users")
	if !st.Holders[0].Read || st.Waiters[0].Read {
		t.Fatalf("read flags: holders %+v, waiters %+v", st.Holders, st.Waiters)
	}
	for _, r := range readers {
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	lockStateIs(t, ctx, cache, "users", []string{"w"}, nil)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lockStateIs(t, ctx, cache, "users", nil, nil)
}

// The generated config cache reads its own writes after Sync: another
// session's Set, a compare-and-set, then the deletion.
func TestGeneratedConfigCache(t *testing.T) {
	ctx, cs, _ := clients(t, 2)
	writer, watcher := cs[0], cs[1]
	cache, err := watcher.FlagsCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := cache.Get(struct{}{}); ok {
		t.Fatal("a value before any Set")
	}
	evs := cache.Events(ctx)
	ver, err := writer.Flags().Set(ctx, coord.Flags{MaxBatch: 10})
	if err != nil {
		t.Fatal(err)
	}
	valueIs := func(want coord.Flags, version runtime.Version) {
		t.Helper()
		if err := cache.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		e, ok := cache.Get(struct{}{})
		if !ok || e.Err != nil || e.Value != want || runtime.Version(e.Stat.Version) != version {
			t.Fatalf("cache holds %+v (ok %v); want %+v at version %d", e, ok, want, version)
		}
	}
	valueIs(coord.Flags{MaxBatch: 10}, ver)
	ver, err = writer.Flags().CompareAndSet(ctx, coord.Flags{DarkMode: true, MaxBatch: 20}, ver)
	if err != nil {
		t.Fatal(err)
	}
	valueIs(coord.Flags{DarkMode: true, MaxBatch: 20}, ver)
	// A reader that has not taken the Added yet gets it with the newest
	// value (the change folded in).
	ev := awaitEvent(t, ctx, evs, "the change", func(ev runtime.CacheEvent[struct{}, coord.Flags]) bool {
		return (ev.Kind == runtime.CacheChanged || ev.Kind == runtime.CacheAdded) && ev.Value.DarkMode
	})
	if ev.Zxid == 0 || ev.Zxid != ev.Stat.Mzxid {
		t.Fatalf("change event zxid %d, stat %+v", ev.Zxid, ev.Stat)
	}
	if err := writer.Flags().Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if e, ok := cache.Get(struct{}{}); ok {
		t.Fatalf("deleted value still held: %+v", e)
	}
}

// A bound below what the instances need stops the cache with
// runtime.ErrCacheFull, not a larger cache.
func TestGeneratedCacheBound(t *testing.T) {
	ctx, cs, _ := clients(t, 2)
	c, watcher := cs[0], cs[1]
	for i := range 3 {
		l := c.OrderLock(i)
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := watcher.OrderLockCache(ctx, runtime.WithMaxNodes(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Sync(ctx); !errors.Is(err, runtime.ErrCacheFull) {
		t.Fatalf("Sync with 3 contenders and a bound of 2: %v", err)
	}
	if n := cache.Stats().Nodes; n > 2 {
		t.Fatalf("the cache holds %d nodes past its bound of 2", n)
	}
}

// The group's cache shows its members in join order with their typed
// payloads, then one fewer after a Leave, then none once the last
// member's session ends (its node is ephemeral).
func TestGeneratedGroupCache(t *testing.T) {
	ctx, cs, ss := clients(t, 3)
	watcher := cs[2]
	cache, err := watcher.WorkersCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := cache.Events(ctx)
	membersAre := func(want ...coord.Member) {
		t.Helper()
		if err := cache.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		st, ok := cache.Get(struct{}{})
		var got []coord.Member
		for _, m := range st.Members {
			if m.Err != nil {
				t.Fatalf("member %s: %v", m.Node, m.Err)
			}
			got = append(got, m.Value)
		}
		if ok != (len(want) > 0) || len(got) != len(want) {
			t.Fatalf("members %+v (ok %v); want %+v", got, ok, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("members %+v; want %+v", got, want)
			}
		}
	}
	first, second := coord.Member{Host: "a", Port: 1}, coord.Member{Host: "b", Port: 2}
	ma, err := cs[0].Workers().Join(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].Workers().Join(ctx, second); err != nil {
		t.Fatal(err)
	}
	membersAre(first, second)
	// Taken before the members go: a reader that never took the Added
	// gets no Removed (the changes fold into none).
	awaitEvent(t, ctx, evs, "the group added", func(ev runtime.CacheEvent[struct{}, runtime.GroupState[coord.Member]]) bool {
		return ev.Kind == runtime.CacheAdded
	})
	if err := ma.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	membersAre(second)
	if err := ss[1].Close(); err != nil {
		t.Fatal(err)
	}
	membersAre()
	awaitEvent(t, ctx, evs, "the group removed", func(ev runtime.CacheEvent[struct{}, runtime.GroupState[coord.Member]]) bool {
		return ev.Kind == runtime.CacheRemoved
	})
}

// The barrier's cache holds the runs whose barrier is up; the double
// barrier's, the participants entered and whether it is ready.
func TestGeneratedBarrierCaches(t *testing.T) {
	ctx, cs, _ := clients(t, 4)
	watcher := cs[3]
	starts, err := watcher.StartCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs[0].Start("r1").Raise(ctx); err != nil {
		t.Fatal(err)
	}
	upIs := func(want bool) {
		t.Helper()
		if err := starts.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := starts.Get("r1"); ok != want {
			t.Fatalf("barrier r1 up in the cache: %v, want %v", ok, want)
		}
	}
	upIs(true)
	if err := cs[0].Start("r1").Lower(ctx); err != nil {
		t.Fatal(err)
	}
	upIs(false)

	epochs, err := watcher.EpochCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := epochs.Events(ctx)
	entered := make(chan error, 3)
	for _, c := range cs[:2] {
		go func() { entered <- c.Epoch(5).Enter(ctx) }()
	}
	awaitEvent(t, ctx, evs, "two participants", func(ev runtime.CacheEvent[int, runtime.DoubleBarrierState]) bool {
		return ev.Key == 5 && len(ev.Value.Participants) == 2
	})
	stateIs := func(participants int, ready bool) {
		t.Helper()
		if err := epochs.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		st, _ := epochs.Get(5)
		if len(st.Participants) != participants || st.Ready != ready {
			t.Fatalf("epoch 5: %d participants, ready %v; want %d, %v", len(st.Participants), st.Ready, participants, ready)
		}
	}
	stateIs(2, false)
	go func() { entered <- cs[2].Epoch(5).Enter(ctx) }()
	for range 3 {
		if err := <-entered; err != nil {
			t.Fatal(err)
		}
	}
	stateIs(3, true)
}

// queueIs syncs a queue cache and fails unless its one instance holds n
// items (none: not there).
func queueIs(t *testing.T, ctx context.Context, cache *runtime.QueueCache[struct{}], n int) runtime.QueueState {
	t.Helper()
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get(struct{}{})
	if ok != (n > 0) || st.Len != n {
		t.Fatalf("queue: %+v (ok %v); want %d items", st, ok, n)
	}
	return st
}

// The generated queue caches show each queue's depth and next item: a
// FIFO queue's items until a prefetching Take takes them all into its
// buffer; a priority queue's items per priority, the urgent one next and
// its delivery the one shown; a delay queue's item due first, next.
// docs/queues.md (what the cache mirrors).
func TestGeneratedQueueCaches(t *testing.T) {
	ctx, cs, _ := clients(t, 2)
	a, watcher := cs[0], cs[1]
	jobs, err := watcher.JobsCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"j1", "j2", "j3"} {
		if err := a.Jobs().Put(ctx, coord.Job{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	queueIs(t, ctx, jobs, 3)
	if j, err := a.Jobs().Take(ctx); err != nil || j.Name != "j1" {
		t.Fatalf("take: %+v, %v", j, err)
	}
	queueIs(t, ctx, jobs, 0) // prefetch 16: the other two wait in a's buffer

	tasks, err := watcher.TasksCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := tasks.Events(ctx)
	if err := a.Tasks().Put(ctx, coord.TasksBulk, coord.Job{Name: "bulk"}); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, ctx, evs, "tasks added", func(ev runtime.CacheEvent[struct{}, runtime.QueueState]) bool {
		return ev.Kind == runtime.CacheAdded && ev.Value.Len == 1
	})
	if err := a.Tasks().Put(ctx, coord.TasksUrgent, coord.Job{Name: "urgent"}); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, ctx, evs, "a second task", func(ev runtime.CacheEvent[struct{}, runtime.QueueState]) bool {
		return ev.Kind == runtime.CacheChanged && ev.Value.Len == 2
	})
	st := queueIs(t, ctx, tasks, 2)
	if st.ByPriority[coord.TasksUrgent] != 1 || st.ByPriority[coord.TasksBulk] != 1 || st.Next.Priority != int(coord.TasksUrgent) {
		t.Fatalf("tasks: %+v; want one urgent, one bulk, the urgent one next", st)
	}
	d, err := a.Tasks().Take(ctx)
	if err != nil || d.Value.Name != "urgent" || d.Node() != st.Next.Node {
		t.Fatalf("take: %v; cache's next %s", err, st.Next.Node)
	}
	queueIs(t, ctx, tasks, 2) // claimed, not acked: still in the queue
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if st := queueIs(t, ctx, tasks, 1); st.Next.Priority != int(coord.TasksBulk) {
		t.Fatalf("tasks after the ack: %+v; want the bulk one next", st)
	}

	reminders, err := watcher.RemindersCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for i, due := range []time.Time{soon.Add(time.Hour), soon} {
		if err := a.Reminders().Put(ctx, coord.Job{Attempt: i}, due); err != nil {
			t.Fatal(err)
		}
	}
	if st := queueIs(t, ctx, reminders, 2); !st.Next.Due.Equal(soon) {
		t.Fatalf("reminders: %+v; want the one due at %v next", st, soon)
	}
}

// electionIs syncs an election cache and returns its one instance.
func electionIs(t *testing.T, ctx context.Context, cache *runtime.ElectionCache[struct{}, coord.Member]) (runtime.ElectionState[coord.Member], bool) {
	t.Helper()
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return cache.Get(struct{}{})
}

// The generated election cache shows the acknowledged leader and the
// candidates in order: a leader, then a second candidate behind it, then
// the second as leader with a higher epoch once the first resigned, then
// nothing. docs/election.md (cache).
func TestGeneratedElectionCache(t *testing.T) {
	ctx, cs, _ := clients(t, 3)
	a, b, watcher := cs[0], cs[1], cs[2]
	cache, err := watcher.SchedulerCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := cache.Events(ctx)
	la, err := a.Scheduler().Campaign(ctx, coord.Member{Host: "a"})
	if err != nil {
		t.Fatal(err)
	}
	st, ok := electionIs(t, ctx, cache)
	if !ok || !st.Leader.Elected || st.Leader.Payload.Host != "a" || st.Leader.Epoch != la.Epoch() || len(st.Candidates) != 1 {
		t.Fatalf("one leader: %+v (ok %v); want a, epoch %d, one candidate", st, ok, la.Epoch())
	}
	elected := make(chan *runtime.Leadership[coord.Member], 1)
	go func() {
		lb, err := b.Scheduler().Campaign(ctx, coord.Member{Host: "b"})
		if err != nil {
			t.Error(err)
		}
		elected <- lb
	}()
	awaitEvent(t, ctx, evs, "a second candidate", func(ev runtime.CacheEvent[struct{}, runtime.ElectionState[coord.Member]]) bool {
		return len(ev.Value.Candidates) == 2
	})
	if st, _ := electionIs(t, ctx, cache); st.Leader.Payload.Host != "a" || st.Candidates[1].Payload.Host != "b" {
		t.Fatalf("two candidates: %+v; want a leading, b behind", st)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lb := <-elected
	if lb == nil {
		t.FailNow()
	}
	st, _ = electionIs(t, ctx, cache)
	if !st.Leader.Elected || st.Leader.Payload.Host != "b" || st.Leader.Epoch != lb.Epoch() || st.Leader.Epoch <= la.Epoch() || len(st.Candidates) != 1 {
		t.Fatalf("after a resigned: %+v; want b leading at epoch %d", st, lb.Epoch())
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if st, ok := electionIs(t, ctx, cache); ok {
		t.Fatalf("no candidate left, yet there: %+v", st)
	}
}

// The generated counter caches show each counter's value, in its layout
// (8 bytes; kazoo's 4), and the zxid of the Add that made it.
// docs/config-counter.md (cache).
func TestGeneratedCounterCaches(t *testing.T) {
	ctx, cs, _ := clients(t, 2)
	a, watcher := cs[0], cs[1]
	for _, c := range []struct {
		name  string
		cache func(context.Context, ...runtime.CacheOption) (*runtime.Cache[struct{}, int64], error)
		add   func(context.Context, int64) (int64, error)
		size  int32 // bytes of the stored value
	}{
		{"hits", watcher.HitsCache, a.Hits().Add, 8},
		{"python_hits", watcher.PythonHitsCache, a.PythonHits().Add, 4},
	} {
		cache, err := c.cache(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []int64{5, -7} {
			if _, err := c.add(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := cache.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if e, ok := cache.Get(struct{}{}); !ok || e.Err != nil || e.Value != -2 || e.Stat.Version != 1 || e.Stat.DataLength != c.size {
			t.Fatalf("%s: %+v (ok %v); want -2 in %d bytes at version 1", c.name, e, ok, c.size)
		}
	}
}
